//! Approvals in Redis, so that several replicas share them: an approval
//! recorded through one server is honoured by any other.
//!
//! Each approval is a hash `PREFIX rec:ID`; `PREFIX bind:KEY` points from a
//! call's binding key to the approval identical calls use; the sorted set
//! `PREFIX index` lists every kept id, scored by when it may be purged;
//! `PREFIX open:CALLER` (the caller's hash) lists a caller's pending ids,
//! scored by when they expire, for `max_pending_per_caller`.
//! `PREFIX nonce:NONCE` marks a 2026-07-28 round trip's approval used.
//! Every step that reads and then writes is one Lua script, so two replicas
//! retrying the same call at once cannot both consume one approval. Keys
//! expire on their own `retain` after the approval does.

use std::collections::HashMap;

use redis::Script;
use redis::aio::ConnectionManager;

use super::store::{
    Approval, ApprovalStore, Check, DecideError, Millis, Request, State, StoreError, StoreFuture,
    StoreLimits, Verdict,
};

/// The key prefix every approval key starts with.
pub const DEFAULT_PREFIX: &str = "pve-mcp:approvals:";

const CHECK_OR_REQUEST: &str = r#"
-- KEYS: binding, index, the caller's open set
-- ARGV: prefix, now, new_id, tool, arguments_hash, arguments, caller,
--       expires, purge, max_records, max_pending_per_caller,
--       has_plan ('1' or '0'), plan
local now = tonumber(ARGV[2])
local expired = ''
local id = redis.call('GET', KEYS[1])
if id then
  local rec = ARGV[1] .. 'rec:' .. id
  local f = redis.call('HMGET', rec, 'state', 'expires_ms')
  local state, expires = f[1], tonumber(f[2])
  if state and expires then
    if now >= expires and state ~= 'used' then
      expired = id
    elseif state == 'approved' then
      redis.call('HSET', rec, 'state', 'used', 'decided_ms', ARGV[2])
      redis.call('DEL', KEYS[1])
      return {'granted', '', unpack(redis.call('HGETALL', rec))}
    elseif state == 'denied' or state == 'pending' then
      return {state, '', unpack(redis.call('HGETALL', rec))}
    end
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[10]) then
  return {'full', ''}
end
-- The caller's pending approvals, scored by when they expire: drop the
-- expired ones and those a person decided, count the rest. The set never
-- grows past the cap, so this loop is short.
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[2])
local open = 0
for _, oid in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  if redis.call('HGET', ARGV[1] .. 'rec:' .. oid, 'state') == 'pending' then
    open = open + 1
  else
    redis.call('ZREM', KEYS[3], oid)
  end
end
if open >= tonumber(ARGV[11]) then
  return {'caller-full', tostring(open)}
end
local rec = ARGV[1] .. 'rec:' .. ARGV[3]
redis.call('HSET', rec, 'id', ARGV[3], 'tool', ARGV[4], 'arguments_hash', ARGV[5],
  'arguments', ARGV[6], 'caller', ARGV[7], 'created_ms', ARGV[2], 'expires_ms', ARGV[8],
  'state', 'pending', 'bind', KEYS[1])
if ARGV[12] == '1' then
  redis.call('HSET', rec, 'plan', ARGV[13])
end
redis.call('PEXPIREAT', rec, ARGV[9])
redis.call('SET', KEYS[1], ARGV[3], 'PXAT', ARGV[9])
redis.call('ZADD', KEYS[2], ARGV[9], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[8], ARGV[3])
redis.call('PEXPIREAT', KEYS[3], ARGV[8])
return {'created', expired, unpack(redis.call('HGETALL', rec))}
"#;

const DECIDE: &str = r#"
-- KEYS: record, index
-- ARGV: new state (approved|denied), now, expires, purge, id
local f = redis.call('HMGET', KEYS[1], 'state', 'expires_ms', 'bind')
local state, expires = f[1], tonumber(f[2])
if not state or not expires then
  return {'unknown'}
end
if tonumber(ARGV[2]) >= expires and state ~= 'used' then
  return {'expired', unpack(redis.call('HGETALL', KEYS[1]))}
end
if not (state == 'pending' or (state == 'approved' and ARGV[1] == 'denied')) then
  return {'decided', unpack(redis.call('HGETALL', KEYS[1]))}
end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'decided_ms', ARGV[2], 'expires_ms', ARGV[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
if f[3] and redis.call('GET', f[3]) == ARGV[5] then
  redis.call('PEXPIREAT', f[3], ARGV[4])
end
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
return {'ok', unpack(redis.call('HGETALL', KEYS[1]))}
"#;

/// Approvals shared through Redis.
pub struct RedisApprovals {
    connection: ConnectionManager,
    prefix: String,
    limits: StoreLimits,
    check_script: Script,
    decide_script: Script,
}

impl RedisApprovals {
    /// A store on this connection, with its keys under `prefix`.
    pub fn new(connection: ConnectionManager, prefix: &str, limits: StoreLimits) -> RedisApprovals {
        RedisApprovals {
            connection,
            prefix: prefix.to_string(),
            limits,
            check_script: Script::new(CHECK_OR_REQUEST),
            decide_script: Script::new(DECIDE),
        }
    }

    fn key(&self, kind: &str, name: &str) -> String {
        format!("{}{kind}:{name}", self.prefix)
    }

    /// `SET PREFIX nonce:NONCE NX PXAT until`: one atomic step, so two
    /// replicas given the same retry at once run it once.
    async fn use_now(&self, nonce: &str, until: Millis, now: Millis) -> Result<bool, StoreError> {
        // The nonce comes from a state this server sealed; anything else
        // would not reach here, but a key name takes only hex.
        if nonce.is_empty() || nonce.len() > 64 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(malformed("a round-trip nonce"));
        }
        let set: Option<String> = redis::cmd("SET")
            .arg(self.key("nonce", nonce))
            .arg(now)
            .arg("NX")
            .arg("PXAT")
            .arg(until.max(now + 1))
            .query_async(&mut self.connection.clone())
            .await
            .map_err(redis_error)?;
        Ok(set.is_some())
    }

    async fn check_now(
        &self,
        request: &Request,
        new_id: &str,
        now: Millis,
    ) -> Result<Check, StoreError> {
        let expires = now.saturating_add(self.limits.ttl_ms());
        let purge = expires.saturating_add(self.limits.retain_ms());
        let reply: Vec<String> = self
            .check_script
            .key(self.key("bind", &request.binding_key()))
            .key(self.key("index", ""))
            .key(self.key("open", &request.caller_key()))
            .arg(&self.prefix)
            .arg(now)
            .arg(new_id)
            .arg(&request.tool)
            .arg(&request.arguments_hash)
            .arg(&request.arguments)
            .arg(&request.caller)
            .arg(expires)
            .arg(purge)
            .arg(self.limits.max_records)
            .arg(self.limits.max_pending_per_caller)
            .arg(if request.plan.is_some() { "1" } else { "0" })
            .arg(request.plan.as_deref().unwrap_or(""))
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(redis_error)?;
        let (status, expired, fields) = match reply.as_slice() {
            [status, expired, fields @ ..] => (status.as_str(), expired, fields),
            _ => return Err(malformed("the reply to a call's check")),
        };
        match status {
            "full" => return Ok(Check::Full),
            "caller-full" => {
                let open = expired
                    .parse()
                    .map_err(|_| malformed("the count of a caller's open approvals"))?;
                return Ok(Check::CallerFull { open });
            }
            _ => {}
        }
        let approval = parse_approval(fields)?;
        Ok(match status {
            "granted" => Check::Granted(approval),
            "denied" => Check::Denied(approval),
            "pending" => Check::Pending {
                approval,
                created: false,
                expired: None,
            },
            "created" => Check::Pending {
                approval,
                created: true,
                expired: (!expired.is_empty()).then(|| expired.clone()),
            },
            _ => return Err(malformed("the status of a call's check")),
        })
    }

    async fn decide_now(
        &self,
        id: &str,
        verdict: Verdict,
        now: Millis,
    ) -> Result<Approval, DecideError> {
        // Ids go into a key name; anything but our own format is unknown.
        if !valid_id(id) {
            return Err(DecideError::Unknown(id.to_string()));
        }
        let expires = now.saturating_add(self.limits.ttl_ms());
        let purge = expires.saturating_add(self.limits.retain_ms());
        let state = match verdict {
            Verdict::Approve => State::Approved,
            Verdict::Deny => State::Denied,
        };
        let reply: Vec<String> = self
            .decide_script
            .key(self.key("rec", id))
            .key(self.key("index", ""))
            .arg(state.as_str())
            .arg(now)
            .arg(expires)
            .arg(purge)
            .arg(id)
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(redis_error)?;
        let Some((status, fields)) = reply.split_first() else {
            return Err(malformed("the reply to a decision").into());
        };
        if status == "unknown" {
            return Err(DecideError::Unknown(id.to_string()));
        }
        let approval = parse_approval(fields)?;
        match status.as_str() {
            "ok" => Ok(approval),
            "expired" => Err(DecideError::Expired(Box::new(approval))),
            "decided" => Err(DecideError::AlreadyDecided(Box::new(approval))),
            _ => Err(malformed("the status of a decision").into()),
        }
    }

    async fn list_now(&self, now: Millis) -> Result<Vec<Approval>, StoreError> {
        let mut connection = self.connection.clone();
        let index = self.key("index", "");
        let (_, ids): (i64, Vec<String>) = redis::pipe()
            .atomic()
            .cmd("ZREMRANGEBYSCORE")
            .arg(&index)
            .arg("-inf")
            .arg(now)
            .cmd("ZRANGE")
            .arg(&index)
            .arg(0)
            .arg(-1)
            .query_async(&mut connection)
            .await
            .map_err(redis_error)?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in &ids {
            pipe.cmd("HGETALL").arg(self.key("rec", id));
        }
        let records: Vec<Vec<String>> = pipe
            .query_async(&mut connection)
            .await
            .map_err(redis_error)?;
        let mut all = Vec::with_capacity(records.len());
        for fields in records {
            // Expired between the two round trips: simply gone.
            if !fields.is_empty() {
                all.push(parse_approval(&fields)?);
            }
        }
        all.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        Ok(all)
    }
}

impl ApprovalStore for RedisApprovals {
    fn check_or_request<'a>(
        &'a self,
        request: &'a Request,
        new_id: &'a str,
        now: Millis,
    ) -> StoreFuture<'a, Result<Check, StoreError>> {
        Box::pin(self.check_now(request, new_id, now))
    }

    fn decide<'a>(
        &'a self,
        id: &'a str,
        verdict: Verdict,
        now: Millis,
    ) -> StoreFuture<'a, Result<Approval, DecideError>> {
        Box::pin(self.decide_now(id, verdict, now))
    }

    fn list(&self, now: Millis) -> StoreFuture<'_, Result<Vec<Approval>, StoreError>> {
        Box::pin(self.list_now(now))
    }

    fn use_once<'a>(
        &'a self,
        nonce: &'a str,
        until: Millis,
        now: Millis,
    ) -> StoreFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.use_now(nonce, until, now))
    }
}

/// Whether `id` has the shape [`super::store::new_id`] gives (tests use
/// shorter ones): `ap-` and 1 to 32 letters, digits or dashes.
fn valid_id(id: &str) -> bool {
    id.strip_prefix("ap-").is_some_and(|rest| {
        (1..=32).contains(&rest.len())
            && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

fn parse_approval(fields: &[String]) -> Result<Approval, StoreError> {
    let map: HashMap<&str, &str> = fields
        .chunks_exact(2)
        .map(|pair| (pair[0].as_str(), pair[1].as_str()))
        .collect();
    let text = |name: &str| {
        map.get(name)
            .map(|v| v.to_string())
            .ok_or_else(|| malformed(name))
    };
    let number = |name: &str| {
        map.get(name)
            .and_then(|v| v.parse::<Millis>().ok())
            .ok_or_else(|| malformed(name))
    };
    Ok(Approval {
        id: text("id")?,
        tool: text("tool")?,
        arguments_hash: text("arguments_hash")?,
        arguments: text("arguments")?,
        // Absent for a tool without writes, and in records written before
        // plans were kept apart from the arguments.
        plan: map.get("plan").map(|v| v.to_string()),
        caller: text("caller")?,
        created_ms: number("created_ms")?,
        decided_ms: map.get("decided_ms").and_then(|v| v.parse().ok()),
        expires_ms: number("expires_ms")?,
        state: map
            .get("state")
            .and_then(|s| State::parse(s))
            .ok_or_else(|| malformed("state"))?,
    })
}

fn malformed(what: &str) -> StoreError {
    StoreError(format!(
        "a stored approval is malformed ({what}); is another program using the same Redis keys?"
    ))
}

/// A Redis error as a store error: its kind only, because the error's
/// own text can carry the address (and a password in it).
fn redis_error(e: redis::RedisError) -> StoreError {
    let what = if e.is_timeout() {
        "Redis timed out".to_string()
    } else if e.is_connection_refusal() || e.is_io_error() || e.is_connection_dropped() {
        "Redis is unreachable".to_string()
    } else {
        format!("Redis failed ({})", e.category())
    };
    StoreError(what)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::approval::store::tests as contract;

    /// A private `redis-server` on a free 127.0.0.1 port, killed on drop.
    pub(crate) struct TestRedis {
        child: std::process::Child,
        /// `redis://127.0.0.1:PORT`.
        pub url: String,
    }

    impl Drop for TestRedis {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Starts one, or `None` when redis-server is not installed and the
    /// test may skip (not under CI: see [`pve_sim::testing::installed`]).
    /// One that is installed but does not start fails the test.
    pub(crate) async fn start_redis() -> Option<TestRedis> {
        let binary = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists());
        pve_sim::testing::installed(
            binary.is_some(),
            "redis-server",
            "install redis-server (Debian: apt-get install redis-server)",
        );
        let binary = binary?;
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port on 127.0.0.1")
                .port();
            let child = std::process::Command::new(binary)
                .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                .args(["--save", "", "--appendonly", "no"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
            let redis = TestRedis {
                child,
                url: format!("redis://127.0.0.1:{port}"),
            };
            for _ in 0..100 {
                if let Ok(client) = redis::Client::open(redis.url.as_str())
                    && let Ok(mut c) = client.get_multiplexed_async_connection().await
                    && redis::cmd("PING")
                        .query_async::<String>(&mut c)
                        .await
                        .is_ok()
                {
                    return Some(redis);
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
        panic!("{binary} did not answer PING on any of five ports");
    }

    async fn store(redis: &TestRedis, prefix: &str, limits: StoreLimits) -> RedisApprovals {
        let connection =
            crate::state::redis_connection(&redis.url).expect("connecting to the test Redis");
        RedisApprovals::new(connection, prefix, limits)
    }

    #[tokio::test]
    async fn redis_store_contract() {
        let Some(redis) = start_redis().await else {
            return;
        };
        contract::pending_cap_is_per_caller(&store(&redis, "t6:", contract::capped()).await).await;
        let limits = StoreLimits::with_ttl(contract::TTL);
        // Each case on its own prefix: a fresh store on the same server.
        contract::approve_then_consume_once(&store(&redis, "t1:", limits).await).await;
        contract::binding_is_exact(&store(&redis, "t2:", limits).await).await;
        contract::deny_stands_until_expiry(&store(&redis, "t3:", limits).await).await;
        contract::expiry_and_unknown(&store(&redis, "t4:", limits).await).await;
        contract::approved_can_be_withdrawn(&store(&redis, "t5:", limits).await).await;
        contract::records_carry_arguments_and_plan_whole(&store(&redis, "t7:", limits).await).await;
        contract::nonces_are_used_once(&store(&redis, "t8:", limits).await).await;
    }

    #[tokio::test]
    async fn two_stores_on_one_redis_share_approvals_and_consume_once() {
        let Some(redis) = start_redis().await else {
            return;
        };
        let limits = StoreLimits::with_ttl(contract::TTL);
        let a = store(&redis, DEFAULT_PREFIX, limits).await;
        let b = store(&redis, DEFAULT_PREFIX, limits).await;
        let req = contract::request("token:ci", "pve_list_vms", "sha256:42");
        let now = super::super::store::now_ms();
        assert!(matches!(
            a.check_or_request(&req, "ap-one", now).await.unwrap(),
            Check::Pending { created: true, .. }
        ));
        b.decide("ap-one", Verdict::Approve, now + 1).await.unwrap();
        // Both replicas retry at once: exactly one runs.
        let (ra, rb) = tokio::join!(
            a.check_or_request(&req, "ap-two", now + 2),
            b.check_or_request(&req, "ap-three", now + 2)
        );
        let granted = [ra.unwrap(), rb.unwrap()]
            .iter()
            .filter(|c| matches!(c, Check::Granted(_)))
            .count();
        assert_eq!(granted, 1);
        assert_eq!(a.list(now + 3).await.unwrap().len(), 2);
        // A round trip's approval used on one replica is used on both.
        let until = now + 60_000;
        let (ua, ub) = tokio::join!(
            a.use_once("feedc0de", until, now),
            b.use_once("feedc0de", until, now)
        );
        assert_eq!([ua.unwrap(), ub.unwrap()].iter().filter(|&&u| u).count(), 1);
        assert!(!a.use_once("feedc0de", until, now + 1).await.unwrap());
    }

    #[tokio::test]
    async fn bad_ids_and_an_unreachable_redis_are_errors_not_panics() {
        let limits = StoreLimits::with_ttl(contract::TTL);
        let connection = crate::state::redis_connection("redis://:hunter22@127.0.0.1:1").unwrap();
        let store = RedisApprovals::new(connection, "x:", limits);
        let request = contract::request("s", "t", "h");
        let err = store
            .check_or_request(&request, "ap-1", super::super::store::now_ms())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("unreachable"), "{err}");
        assert!(!err.to_string().contains("hunter22"), "{err}");
        assert!(matches!(
            store.decide("ap-1", Verdict::Approve, 1).await,
            Err(DecideError::Store(_))
        ));
        assert!(store.list(1).await.is_err());
        assert!(valid_id("ap-0123456789abcdef"));
        for bad in ["", "ap-", "ap-*", "x-1", "ap-a:b", "ap-{x}"] {
            assert!(!valid_id(bad), "{bad}");
        }
    }
}
