//! Counters in Redis, so several `pve-mcp` replicas share one budget. Each
//! reservation is one Lua script (INCR, PEXPIRE, and DECR again when over
//! the limit) that reads Redis's own clock, so replicas whose clocks drift
//! still count in the same window.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::{CounterStore, Reservation, Reserve, StateError, StateFuture, Window};

/// Every key this host writes starts with this.
const PREFIX: &str = "pve-mcp:ratelimit:";

/// KEYS[1] the counter; ARGV[1] the limit; ARGV[2] the window in ms.
/// Returns {1, 0, key} when a unit was taken, {0, ms until the window
/// ends, key} when the budget is spent.
const RESERVE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local len = tonumber(ARGV[2])
local window = math.floor(now / len)
local key = KEYS[1] .. ':' .. string.format('%d', window)
local used = redis.call('INCR', key)
local ends = (window + 1) * len
if used == 1 then
  redis.call('PEXPIRE', key, ends - now + 1000)
end
if used > tonumber(ARGV[1]) then
  redis.call('DECR', key)
  return {0, ends - now, key}
end
return {1, 0, key}
";

/// KEYS[1] the windowed counter. Never goes below zero, and a counter that
/// expired with its window stays gone.
const RELEASE: &str = r"
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if v > 0 then
  redis.call('DECR', KEYS[1])
end
return 0
";

/// How long to wait for Redis before a call is decided as "unreachable".
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// A Redis URL with any password removed, for logs and messages.
pub fn redacted_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.rsplit_once('@') {
            Some((_, host)) => format!("{scheme}://[REDACTED]@{host}"),
            None => url.to_string(),
        },
        None => "(not a URL)".to_string(),
    }
}

/// Checks a `redis://` URL without connecting; the error names no
/// credentials.
pub fn check_url(url: &str) -> Result<(), String> {
    if !(url.starts_with("redis://")
        || url.starts_with("redis+unix://")
        || url.starts_with("unix://"))
    {
        return Err(format!(
            "{} is not a redis:// URL (rediss:// is not supported in this build)",
            redacted_url(url)
        ));
    }
    redis::Client::open(url).map(|_| ()).map_err(|e| {
        format!(
            "{} is not a usable Redis URL ({})",
            redacted_url(url),
            e.category()
        )
    })
}

/// A connection to Redis that connects on first use and reconnects after a
/// failure, with short timeouts so an unreachable Redis answers quickly.
/// The approval store can share it: cloning is cheap.
pub fn redis_connection(url: &str) -> Result<ConnectionManager, StateError> {
    check_url(url).map_err(StateError)?;
    let client = redis::Client::open(url)
        .map_err(|e| StateError(format!("{}: {}", redacted_url(url), e.category())))?;
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT))
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(200));
    ConnectionManager::new_lazy_with_config(client, config)
        .map_err(|e| StateError(format!("{}: {}", redacted_url(url), e.category())))
}

/// Rate-limit counters in Redis.
pub struct RedisStore {
    connection: ConnectionManager,
    address: String,
    reserve: redis::Script,
    release: redis::Script,
}

impl RedisStore {
    /// A store on this Redis; nothing is sent until the first call.
    pub fn new(url: &str) -> Result<RedisStore, StateError> {
        Ok(RedisStore {
            connection: redis_connection(url)?,
            address: redacted_url(url),
            reserve: redis::Script::new(RESERVE),
            release: redis::Script::new(RELEASE),
        })
    }

    fn error(&self, e: &redis::RedisError) -> StateError {
        // The error's own text can carry the address it tried; ours is
        // already redacted.
        let what = if e.is_timeout() {
            "timed out".to_string()
        } else if e.is_connection_refusal() || e.is_io_error() || e.is_connection_dropped() {
            "unreachable".to_string()
        } else {
            format!("failed ({})", e.category())
        };
        StateError(format!("Redis at {} {what}", self.address))
    }
}

impl CounterStore for RedisStore {
    fn reserve<'a>(&'a self, key: &'a str, window: Window) -> StateFuture<'a, Reserve> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let length_ms = (window.length.as_millis() as u64).max(1);
            let (granted, retry_ms, full_key): (i64, i64, String) = self
                .reserve
                .key(format!("{PREFIX}{key}"))
                .arg(window.limit)
                .arg(length_ms)
                .invoke_async(&mut connection)
                .await
                .map_err(|e| self.error(&e))?;
            let index = full_key
                .rsplit_once(':')
                .and_then(|(_, w)| w.parse::<u64>().ok())
                .ok_or_else(|| {
                    StateError(format!(
                        "Redis at {} answered an unexpected key",
                        self.address
                    ))
                })?;
            if granted == 1 {
                Ok(Reserve::Granted(Reservation {
                    key: key.to_string(),
                    window: index,
                }))
            } else {
                Ok(Reserve::Exhausted {
                    retry_after: Duration::from_millis(retry_ms.max(0) as u64),
                })
            }
        })
    }

    fn release<'a>(&'a self, reservation: &'a Reservation) -> StateFuture<'a, ()> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let _: i64 = self
                .release
                .key(format!(
                    "{PREFIX}{}:{}",
                    reservation.key, reservation.window
                ))
                .invoke_async(&mut connection)
                .await
                .map_err(|e| self.error(&e))?;
            Ok(())
        })
    }

    fn describe(&self) -> String {
        self.address.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password() {
        assert_eq!(
            redacted_url("redis://:hunter2@10.0.0.1:6379/0"),
            "redis://[REDACTED]@10.0.0.1:6379/0"
        );
        assert_eq!(
            redacted_url("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
        assert!(check_url("http://x").is_err());
        assert!(!check_url("http://user:pw@x").unwrap_err().contains("pw"));
        assert!(check_url("redis://127.0.0.1:6379").is_ok());
    }
}
