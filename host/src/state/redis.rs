//! Counters in Redis, so several `pve-mcp` replicas share one budget. Each
//! reservation is one Lua script (INCR, PEXPIRE, and DECR again when over
//! the limit) that reads Redis's own clock, so replicas whose clocks drift
//! still count in the same window.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::counter::{CounterStore, Reservation, Reserve, StateError, StateFuture, Window};

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

/// A Redis URL with every credential removed, for logs and messages.
///
/// It is parsed as the redis crate parses it, and keeps only what says
/// where Redis is: scheme, host, port, path, and the `db` and `protocol`
/// query parameters. User info (`redis://user:pass@host`, where the crate
/// reads TCP credentials) becomes `[REDACTED]@`; every other query value
/// (`user` and `pass`, where it reads them for unix sockets, `password`,
/// anything a later version might read) and any fragment become
/// `[REDACTED]`. What does not parse as a Redis URL shows only its scheme.
pub fn redacted_url(url: &str) -> String {
    const HIDDEN: &str = "[REDACTED]";
    let Some(parsed) = redis::parse_redis_url(url) else {
        return match url.split_once("://") {
            Some((scheme, _))
                if !scheme.is_empty()
                    && scheme
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
            {
                format!("{scheme}://{HIDDEN}")
            }
            _ => HIDDEN.to_string(),
        };
    };
    let mut shown = format!("{}://", parsed.scheme());
    if !parsed.username().is_empty() || parsed.password().is_some() {
        shown.push_str(HIDDEN);
        shown.push('@');
    }
    shown.push_str(parsed.host_str().unwrap_or(""));
    if let Some(port) = parsed.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(parsed.path());
    if parsed.query().is_some() {
        let pairs: Vec<String> = parsed
            .query_pairs()
            .map(|(key, value)| {
                let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric());
                match key.as_ref() {
                    "db" | "protocol" if plain(&value) => format!("{key}={value}"),
                    // The names the crate (or a reader) uses say which
                    // credential was given; any other name might be one.
                    "db" | "protocol" | "user" | "username" | "pass" | "password" => {
                        format!("{key}={HIDDEN}")
                    }
                    _ => HIDDEN.to_string(),
                }
            })
            .collect();
        shown.push('?');
        shown.push_str(&pairs.join("&"));
    }
    if parsed.fragment().is_some() {
        shown.push('#');
        shown.push_str(HIDDEN);
    }
    shown
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

    /// Every place the redis crate reads a credential from: the URL's user
    /// info (TCP) and the `user`/`pass` query parameters (unix sockets),
    /// plus `password` and `username`, which a reader might try, and
    /// percent-encoded or repeated forms of them.
    #[test]
    fn every_credential_form_is_redacted() {
        let secret = "SECRETVALUE1234";
        let cases = [
            "unix:///run/redis.sock?pass=SECRETVALUE1234",
            "unix:///run/redis.sock?db=1&pass=SECRETVALUE1234",
            "redis+unix:///run/redis.sock?pass=SECRETVALUE1234",
            "unix:///run/redis.sock?password=SECRETVALUE1234",
            "unix:///run/redis.sock?user=SECRETVALUE1234&pass=SECRETVALUE1234",
            "unix:///run/redis.sock?username=SECRETVALUE1234",
            "unix:///run/redis.sock?p%61ss=SECRETVALUE1234",
            "unix:///run/redis.sock?pass=a&pass=SECRETVALUE1234",
            "unix:///run/redis.sock?SECRETVALUE1234",
            "unix:///run/redis.sock#SECRETVALUE1234",
            "redis://:SECRETVALUE1234@10.0.0.1:6379",
            "redis://SECRETVALUE1234:SECRETVALUE1234@10.0.0.1:6379/0",
            "redis://default:SECRETVALUE1234@10.0.0.1/0?protocol=resp3",
            "redis://10.0.0.1:6379/0?password=SECRETVALUE1234",
            "redis://:SECRETVALUE1234?x@10.0.0.1",
            "redis://:SECRETVALUE1234#x@10.0.0.1",
            "redis://:SECRET%56ALUE1234@10.0.0.1",
            "not a url SECRETVALUE1234",
        ];
        for url in cases {
            let shown = redacted_url(url);
            assert!(
                !shown.contains(secret) && !shown.contains("SECRET"),
                "{url} is shown as {shown}"
            );
            if let Err(e) = check_url(url) {
                assert!(!e.contains("SECRET"), "{url}: {e}");
            }
        }
        // What is not a credential stays, so the message still says where.
        assert_eq!(
            redacted_url("unix:///run/redis.sock?db=2&pass=SECRETVALUE1234"),
            "unix:///run/redis.sock?db=2&pass=[REDACTED]"
        );
        assert_eq!(
            redacted_url("redis+unix:///run/redis.sock?user=u&pass=p"),
            "redis+unix:///run/redis.sock?user=[REDACTED]&pass=[REDACTED]"
        );
        assert_eq!(
            redacted_url("redis://u:p@[::1]:6380/3?protocol=resp3"),
            "redis://[REDACTED]@[::1]:6380/3?protocol=resp3"
        );
        assert_eq!(
            redacted_url("unix:///run/redis.sock"),
            "unix:///run/redis.sock"
        );
    }
}
