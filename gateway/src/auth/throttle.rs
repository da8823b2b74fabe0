//! Failed logins, counted per source address: past `max_failures` within `window`, a
//! source's requests are refused unread until the window ends. The table is bounded;
//! when it is full, windows that ended are dropped, then the oldest.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Policy {
    pub max_failures: u32,
    pub window: Duration,
    pub max_sources: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_failures: 10,
            window: Duration::from_secs(60),
            max_sources: 10_000,
        }
    }
}

struct Window {
    started: Instant,
    failures: u32,
}

pub(crate) struct FailedLogins {
    policy: Policy,
    /// `None` collects requests whose source is unknown.
    sources: Mutex<HashMap<Option<IpAddr>, Window>>,
}

impl FailedLogins {
    pub(crate) fn new(policy: Policy) -> FailedLogins {
        FailedLogins {
            policy,
            sources: Mutex::new(HashMap::new()),
        }
    }

    /// How long `source` must wait, if it failed too often lately.
    pub(crate) fn blocked(&self, source: Option<IpAddr>) -> Option<Duration> {
        let sources = self.sources.lock();
        let window = sources.get(&source)?;
        let elapsed = window.started.elapsed();
        (window.failures >= self.policy.max_failures && elapsed < self.policy.window)
            .then(|| self.policy.window - elapsed)
    }

    pub(crate) fn record(&self, source: Option<IpAddr>) {
        let mut sources = self.sources.lock();
        let window_length = self.policy.window;
        if sources.len() >= self.policy.max_sources && !sources.contains_key(&source) {
            sources.retain(|_, window| window.started.elapsed() < window_length);
            if sources.len() >= self.policy.max_sources {
                let oldest = sources
                    .iter()
                    .min_by_key(|(_, window)| window.started)
                    .map(|(source, _)| *source);
                if let Some(oldest) = oldest {
                    sources.remove(&oldest);
                }
            }
        }
        let window = sources.entry(source).or_insert(Window {
            started: Instant::now(),
            failures: 0,
        });
        if window.started.elapsed() >= window_length {
            *window = Window {
                started: Instant::now(),
                failures: 0,
            };
        }
        window.failures = window.failures.saturating_add(1);
    }
}
