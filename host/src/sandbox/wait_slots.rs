//! Each caller's share of the wait slots (`[sandbox]
//! max_waiting_per_caller`). The wait slots keep calls that wait from
//! taking every call slot; this keeps one caller's waits from taking every
//! wait slot, so one tenant holding `pve_wait_task` calls cannot make
//! another tenant's waits queue behind its own.
//!
//! A caller is counted across its sessions (by its bearer token when it
//! has one: see [`crate::caller::Caller::wait_key`]); a wait beyond its
//! share is refused at once rather than queued, since a queued wait would
//! hold its place in the line just the same.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::config::SandboxLimits;

/// How many waits each caller may run (or queue for a wait slot) at once.
#[derive(Debug)]
pub struct WaitShares {
    share: usize,
    held: Arc<Mutex<HashMap<Arc<str>, usize>>>,
}

/// One wait counted against its caller's share; dropping it gives the
/// place back.
#[derive(Debug)]
pub struct WaitClaim {
    key: Arc<str>,
    held: Arc<Mutex<HashMap<Arc<str>, usize>>>,
}

/// A caller already holds its whole share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareFull {
    /// The share, [`WaitShares::share`].
    pub share: usize,
}

impl ShareFull {
    /// What the agent is told: the setting, and what to do.
    pub fn message(&self) -> String {
        format!(
            "Too many waits at once: this caller already has {} calls waiting for Proxmox (or queued to), \
             the most one caller may have ([sandbox] max_waiting_per_caller). Nothing was run. \
             Wait for one of them to finish and retry, or call without `wait: true` and check the task \
             later with pve_get_task_status; the operator can raise max_waiting_per_caller.",
            self.share
        )
    }
}

impl WaitShares {
    /// At most `share` (at least one) waits per caller.
    pub fn new(share: usize) -> WaitShares {
        WaitShares {
            share: share.max(1),
            held: Arc::default(),
        }
    }

    /// The share each caller gets.
    pub fn share(&self) -> usize {
        self.share
    }

    /// A place for one more wait of `key`, or [`ShareFull`] when it holds
    /// its share already.
    pub fn try_claim(&self, key: &Arc<str>) -> Result<WaitClaim, ShareFull> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(key.clone()).or_insert(0);
        if *count >= self.share {
            return Err(ShareFull { share: self.share });
        }
        *count += 1;
        Ok(WaitClaim {
            key: key.clone(),
            held: self.held.clone(),
        })
    }

    /// How many waits `key` holds now.
    #[cfg(test)]
    fn held_by(&self, key: &str) -> usize {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.get(key).copied().unwrap_or(0)
    }
}

impl Drop for WaitClaim {
    fn drop(&mut self) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            // Without this the map would keep every caller ever seen (every
            // session of a server without tokens).
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// How many waits one caller may hold when there are `wait_slots`:
/// `[sandbox] max_waiting_per_caller`, or when it is unset a quarter of
/// the wait slots, at least one.
pub fn share_of(limits: &SandboxLimits, wait_slots: usize) -> usize {
    limits
        .max_waiting_per_caller
        .unwrap_or((wait_slots / 4).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_gets_its_share_and_no_more_and_others_are_untouched() {
        let shares = WaitShares::new(2);
        let alice: Arc<str> = Arc::from("token:alice");
        let bob: Arc<str> = Arc::from("token:bob");
        let a1 = shares.try_claim(&alice).unwrap();
        let _a2 = shares.try_claim(&alice).unwrap();
        let refused = shares.try_claim(&alice).unwrap_err();
        assert_eq!(refused, ShareFull { share: 2 });
        let text = refused.message();
        assert!(
            text.contains("max_waiting_per_caller") && text.contains("2 calls waiting"),
            "{text}"
        );
        let _b1 = shares.try_claim(&bob).unwrap();
        drop(a1);
        assert_eq!(shares.held_by("token:alice"), 1);
        let _a3 = shares
            .try_claim(&alice)
            .expect("a finished wait frees a place");
    }

    #[test]
    fn callers_without_waits_are_forgotten() {
        let shares = WaitShares::new(1);
        let key: Arc<str> = Arc::from("session:abc");
        drop(shares.try_claim(&key).unwrap());
        assert!(shares.held.lock().unwrap().is_empty());
        // A refusal does not leave an entry that counts.
        let _held = shares.try_claim(&key).unwrap();
        assert!(shares.try_claim(&key).is_err());
        assert_eq!(shares.held_by("session:abc"), 1);
    }

    #[test]
    fn the_default_is_a_quarter_of_the_wait_slots() {
        let unset = SandboxLimits::default();
        assert_eq!(
            share_of(&unset, 24),
            6,
            "the default 32 calls: 24 wait slots"
        );
        assert_eq!(share_of(&unset, 15), 3);
        assert_eq!(share_of(&unset, 3), 1);
        assert_eq!(share_of(&unset, 1), 1);
        let set = SandboxLimits {
            max_waiting_per_caller: Some(20),
            ..SandboxLimits::default()
        };
        assert_eq!(share_of(&set, 15), 20);
        assert_eq!(WaitShares::new(0).share(), 1);
    }
}
