//! Flow control on the partition leader: an in-flight request limiter whose limit adapts
//! to latency, with Zeebe's algorithms and parameters (AIMD by default; fixed, Vegas,
//! Gradient and Gradient2 selectable). A request holds a permit from admission until it
//! is answered; the answer's latency feeds the algorithm.
//!
//! The limiter lives inside the partition actor, so it needs no locking.

use std::time::{Duration, Instant};

use rill_config::{
    AimdConfig, FixedLimitConfig, Gradient2Config, GradientConfig, LimitAlgorithm,
    RequestLimitConfig, VegasConfig,
};

/// The upper bound of the adaptive algorithms that have no `max-limit` setting.
const DEFAULT_MAX_LIMIT: f64 = 1000.0;

/// An algorithm that adjusts the in-flight limit from request samples.
pub trait Limit: Send {
    fn limit(&self) -> u32;
    /// One finished request: its latency, how many were in flight when it started, and
    /// whether it was dropped (timed out or failed without an answer).
    fn on_sample(&mut self, rtt: Duration, inflight: u32, dropped: bool);
}

/// Additive increase, multiplicative decrease (Zeebe's default).
pub struct AimdLimit {
    limit: u32,
    config: AimdConfig,
}

impl AimdLimit {
    pub fn new(config: &AimdConfig) -> Self {
        AimdLimit {
            limit: config
                .initial_limit
                .clamp(config.min_limit.max(1), config.max_limit.max(1)),
            config: config.clone(),
        }
    }
}

impl Limit for AimdLimit {
    fn limit(&self) -> u32 {
        self.limit
    }

    fn on_sample(&mut self, rtt: Duration, inflight: u32, dropped: bool) {
        let mut limit = self.limit;
        if dropped || rtt > self.config.request_timeout {
            limit = (f64::from(limit) * self.config.backoff_ratio) as u32;
        } else if inflight.saturating_mul(2) >= limit {
            limit = limit.saturating_add(1);
        }
        self.limit = limit.clamp(self.config.min_limit.max(1), self.config.max_limit.max(1));
    }
}

/// A constant limit.
pub struct FixedLimit(u32);

impl FixedLimit {
    pub fn new(config: &FixedLimitConfig) -> Self {
        FixedLimit(config.limit.max(1))
    }
}

impl Limit for FixedLimit {
    fn limit(&self) -> u32 {
        self.0
    }

    fn on_sample(&mut self, _rtt: Duration, _inflight: u32, _dropped: bool) {}
}

/// Tracks the lowest latency seen ("no load" latency), re-measured every so often so a
/// permanently slower system is not mistaken for a queue.
struct NoLoadRtt {
    rtt: Option<Duration>,
    samples: u32,
}

impl NoLoadRtt {
    const PROBE_EVERY: u32 = 1000;

    fn observe(&mut self, rtt: Duration) -> Option<Duration> {
        self.samples += 1;
        if self.samples >= Self::PROBE_EVERY {
            self.samples = 0;
            self.rtt = Some(rtt);
            return None;
        }
        match self.rtt {
            Some(min) if rtt >= min => Some(min),
            _ => {
                self.rtt = Some(rtt);
                None
            }
        }
    }
}

fn log10(limit: f64) -> f64 {
    limit.max(1.0).log10().max(1.0)
}

/// TCP Vegas applied to requests: estimates the queue from how much slower requests
/// are than at no load, and keeps it between `alpha` and `beta`.
pub struct VegasLimit {
    limit: f64,
    alpha: f64,
    beta: f64,
    no_load: NoLoadRtt,
}

impl VegasLimit {
    pub fn new(config: &VegasConfig) -> Self {
        VegasLimit {
            limit: f64::from(config.initial_limit.max(1)),
            alpha: f64::from(config.alpha),
            beta: f64::from(config.beta),
            no_load: NoLoadRtt {
                rtt: None,
                samples: 0,
            },
        }
    }
}

impl Limit for VegasLimit {
    fn limit(&self) -> u32 {
        self.limit as u32
    }

    fn on_sample(&mut self, rtt: Duration, inflight: u32, dropped: bool) {
        let Some(no_load) = self.no_load.observe(rtt) else {
            return;
        };
        let limit = self.limit;
        let next = if dropped {
            limit - log10(limit)
        } else if f64::from(inflight) * 2.0 < limit {
            return; // not using the limit: no information
        } else {
            let ratio = no_load.as_secs_f64() / rtt.as_secs_f64().max(1e-9);
            let queue = (limit * (1.0 - ratio)).ceil();
            if queue <= log10(limit) {
                limit + self.beta
            } else if queue < self.alpha {
                limit + log10(limit)
            } else if queue > self.beta {
                limit - log10(limit)
            } else {
                return;
            }
        };
        self.limit = next.clamp(1.0, DEFAULT_MAX_LIMIT);
    }
}

/// Shrinks the limit by the ratio of no-load to current latency (never below half),
/// grows it by a small queue allowance; smoothed.
pub struct GradientLimit {
    limit: f64,
    min_limit: f64,
    tolerance: f64,
    no_load: NoLoadRtt,
}

const SMOOTHING: f64 = 0.2;

impl GradientLimit {
    pub fn new(config: &GradientConfig) -> Self {
        GradientLimit {
            limit: f64::from(config.initial_limit.max(1)),
            min_limit: f64::from(config.min_limit.max(1)),
            tolerance: config.rtt_tolerance.max(1.0),
            no_load: NoLoadRtt {
                rtt: None,
                samples: 0,
            },
        }
    }
}

impl Limit for GradientLimit {
    fn limit(&self) -> u32 {
        self.limit as u32
    }

    fn on_sample(&mut self, rtt: Duration, inflight: u32, dropped: bool) {
        let no_load = self.no_load.observe(rtt).unwrap_or(rtt);
        let limit = self.limit;
        let next = if dropped {
            limit / 2.0
        } else if f64::from(inflight) < limit / 2.0 {
            return;
        } else {
            let gradient = (self.tolerance * no_load.as_secs_f64() / rtt.as_secs_f64().max(1e-9))
                .clamp(0.5, 1.0);
            let target = limit * gradient + limit.sqrt();
            limit * (1.0 - SMOOTHING) + target * SMOOTHING
        };
        self.limit = next.clamp(self.min_limit, DEFAULT_MAX_LIMIT);
    }
}

/// Like Gradient, but compares the latency with a long-window average instead of the
/// minimum, which copes better with latency that drifts.
pub struct Gradient2Limit {
    limit: f64,
    min_limit: f64,
    tolerance: f64,
    long_window: f64,
    long_rtt: Option<f64>,
    warmup: u32,
}

impl Gradient2Limit {
    const QUEUE: f64 = 4.0;
    const WARMUP: u32 = 10;

    pub fn new(config: &Gradient2Config) -> Self {
        Gradient2Limit {
            limit: f64::from(config.initial_limit.max(1)),
            min_limit: f64::from(config.min_limit.max(1)),
            tolerance: config.rtt_tolerance.max(1.0),
            long_window: f64::from(config.long_window.max(1)),
            long_rtt: None,
            warmup: 0,
        }
    }
}

impl Limit for Gradient2Limit {
    fn limit(&self) -> u32 {
        self.limit as u32
    }

    fn on_sample(&mut self, rtt: Duration, inflight: u32, dropped: bool) {
        let short = rtt.as_secs_f64().max(1e-9);
        let mut long = match self.long_rtt {
            None => short,
            Some(avg) if self.warmup < Self::WARMUP => {
                // plain average while warming up
                (avg * f64::from(self.warmup) + short) / f64::from(self.warmup + 1)
            }
            Some(avg) => {
                let factor = 2.0 / (self.long_window + 1.0);
                avg * (1.0 - factor) + short * factor
            }
        };
        self.warmup = self.warmup.saturating_add(1);
        // After a long overload the average is far above the present: let it recover.
        if long / short > 2.0 {
            long *= 0.95;
        }
        self.long_rtt = Some(long);
        let limit = self.limit;
        let next = if dropped {
            limit / 2.0
        } else if f64::from(inflight) < limit / 2.0 {
            return;
        } else {
            let gradient = (self.tolerance * long / short).clamp(0.5, 1.0);
            let target = limit * gradient + Self::QUEUE;
            limit * (1.0 - SMOOTHING) + target * SMOOTHING
        };
        self.limit = next.clamp(self.min_limit, DEFAULT_MAX_LIMIT);
    }
}

/// The write-rate limit of a partition leader (`flow-control.write`): commands it admits
/// per second, ramping up linearly over `ramp_up` from when it starts leading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteRate {
    pub per_second: u64,
    pub ramp_up: Duration,
}

impl WriteRate {
    /// The write-rate limit `flow-control.write` asks for; `None` when it is off or
    /// unlimited.
    pub fn from_config(config: &rill_config::WriteLimitConfig) -> Option<WriteRate> {
        (config.enabled && config.limit > 0).then_some(WriteRate {
            per_second: config.limit,
            ramp_up: config.ramp_up,
        })
    }
}

/// A token bucket holding at most one second of the current rate. Commands that complete
/// work are never refused and not counted (as for the request limiter).
pub struct WriteRateLimiter {
    rate: WriteRate,
    started: Instant,
    tokens: f64,
    refilled: Instant,
}

impl WriteRateLimiter {
    /// The rate never falls below this while ramping up, so a new leader is never at a
    /// standstill.
    const MIN_RATE: f64 = 1.0;

    pub fn new(rate: WriteRate, now: Instant) -> Self {
        WriteRateLimiter {
            rate,
            started: now,
            tokens: 1.0,
            refilled: now,
        }
    }

    /// Commands per second admitted at `now`.
    pub fn rate(&self, now: Instant) -> f64 {
        let full = self.rate.per_second as f64;
        let ramped = if self.rate.ramp_up.is_zero() {
            full
        } else {
            let elapsed = now.saturating_duration_since(self.started).as_secs_f64();
            full * (elapsed / self.rate.ramp_up.as_secs_f64()).min(1.0)
        };
        ramped.max(Self::MIN_RATE)
    }

    /// Admits one command if the rate allows it now.
    #[must_use]
    pub fn try_acquire(&mut self, now: Instant) -> bool {
        let rate = self.rate(now);
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.refilled = now;
        self.tokens = (self.tokens + rate * elapsed).min(rate.max(1.0));
        // Tolerates the rounding of many small refills.
        if self.tokens >= 1.0 - 1e-9 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Why a command is refused at `now` (after [`WriteRateLimiter::try_acquire`] said no).
    pub fn refusal(&self, now: Instant) -> String {
        let rate = self.rate(now);
        let ramping = if rate < self.rate.per_second as f64 {
            format!(
                ", {rate:.0} per second while it ramps up over flow-control.write.ramp-up ({})",
                humantime::format_duration(self.rate.ramp_up)
            )
        } else {
            String::new()
        };
        format!(
            "its write rate limit is reached (flow-control.write.limit = {} commands per \
             second{ramping})",
            self.rate.per_second
        )
    }
}

/// Builds the configured algorithm.
pub fn limit_from_config(config: &RequestLimitConfig) -> Box<dyn Limit> {
    match config.algorithm {
        LimitAlgorithm::Aimd => Box::new(AimdLimit::new(&config.aimd)),
        LimitAlgorithm::Fixed => Box::new(FixedLimit::new(&config.fixed)),
        LimitAlgorithm::Vegas => Box::new(VegasLimit::new(&config.vegas)),
        LimitAlgorithm::Gradient => Box::new(GradientLimit::new(&config.gradient)),
        LimitAlgorithm::Gradient2 => Box::new(Gradient2Limit::new(&config.gradient2)),
    }
}

/// Admission of one request: when it started and how many were in flight then.
#[derive(Debug, Clone, Copy)]
#[must_use = "a permit is handed back when its request is answered"]
pub struct Permit {
    started: Instant,
    inflight_at_start: u32,
    /// Counted in flight (every request, but a command that finishes work only with
    /// `use-windowed`).
    counted: bool,
}

/// The per-partition in-flight request limiter.
pub struct RequestLimiter {
    enabled: bool,
    /// Count commands that finish work in flight (`flow-control.request.use-windowed`).
    count_never_rejected: bool,
    limit: Box<dyn Limit>,
    inflight: u32,
    peak: u32,
}

impl RequestLimiter {
    pub fn new(config: &RequestLimitConfig) -> Self {
        RequestLimiter {
            enabled: config.enabled,
            count_never_rejected: config.use_windowed,
            limit: limit_from_config(config),
            inflight: 0,
            peak: 0,
        }
    }

    /// Admits a request if below the limit. Commands that finish work are always
    /// admitted (and with `use-windowed` counted, so they take room from new work).
    #[must_use]
    pub fn try_acquire(&mut self, never_rejected: bool, now: Instant) -> Option<Permit> {
        if self.enabled && !never_rejected && self.inflight >= self.limit.limit() {
            return None;
        }
        if never_rejected && !self.count_never_rejected {
            return Some(Permit {
                started: now,
                inflight_at_start: self.inflight,
                counted: false,
            });
        }
        self.inflight += 1;
        self.peak = self.peak.max(self.inflight);
        Some(Permit {
            started: now,
            inflight_at_start: self.inflight,
            counted: true,
        })
    }

    /// The request of `permit` finished (answered, or `dropped` without an answer).
    pub fn release(&mut self, permit: Permit, now: Instant, dropped: bool) {
        if !permit.counted {
            return;
        }
        self.inflight = self.inflight.saturating_sub(1);
        let rtt = now.saturating_duration_since(permit.started);
        self.limit.on_sample(rtt, permit.inflight_at_start, dropped);
    }

    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    /// The most requests ever in flight at once.
    pub fn peak_inflight(&self) -> u32 {
        self.peak
    }

    pub fn limit(&self) -> u32 {
        if self.enabled {
            self.limit.limit()
        } else {
            u32::MAX
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn aimd_grows_when_busy_and_backs_off_on_slow_requests() {
        let config = AimdConfig::default();
        let mut aimd = AimdLimit::new(&config);
        assert_eq!(aimd.limit(), 100);
        aimd.on_sample(MS, 60, false);
        assert_eq!(aimd.limit(), 101, "busy and fast: +1");
        aimd.on_sample(MS, 10, false);
        assert_eq!(aimd.limit(), 101, "idle: unchanged");
        aimd.on_sample(Duration::from_millis(500), 60, false);
        assert_eq!(aimd.limit(), 90, "slower than request-timeout: x0.9");
        for _ in 0..200 {
            aimd.on_sample(MS, 0, true);
        }
        assert_eq!(aimd.limit(), config.min_limit);
        for _ in 0..5000 {
            aimd.on_sample(MS, 2000, false);
        }
        assert_eq!(aimd.limit(), config.max_limit);
    }

    #[test]
    fn limiter_rejects_above_the_limit_but_never_finishing_work() {
        let config = RequestLimitConfig {
            algorithm: LimitAlgorithm::Fixed,
            fixed: FixedLimitConfig { limit: 3 },
            ..RequestLimitConfig::default()
        };
        let mut limiter = RequestLimiter::new(&config);
        let now = Instant::now();
        let permits: Vec<_> = (0..3)
            .map(|_| limiter.try_acquire(false, now).unwrap())
            .collect();
        assert!(limiter.try_acquire(false, now).is_none());
        let extra = limiter.try_acquire(true, now).expect("never rejected");
        assert_eq!(limiter.inflight(), 4);
        limiter.release(extra, now, false);
        limiter.release(permits[0], now, false);
        assert!(limiter.try_acquire(false, now).is_some());

        // Without use-windowed, commands that finish work take no room.
        let mut limiter = RequestLimiter::new(&RequestLimitConfig {
            use_windowed: false,
            ..config
        });
        let _permits: Vec<_> = (0..2)
            .map(|_| limiter.try_acquire(false, now).unwrap())
            .collect();
        let finishing = limiter.try_acquire(true, now).expect("never rejected");
        assert_eq!(limiter.inflight(), 2, "not counted");
        assert!(
            limiter.try_acquire(false, now).is_some(),
            "room for new work"
        );
        limiter.release(finishing, now, false);
        assert_eq!(limiter.inflight(), 3);
    }

    #[test]
    fn the_write_rate_holds_at_its_limit_and_ramps_up_from_a_start() {
        let start = Instant::now();
        let steady = WriteRate {
            per_second: 100,
            ramp_up: Duration::ZERO,
        };
        let mut limiter = WriteRateLimiter::new(steady, start);
        // Over ten seconds in steps of 1 ms: 100 per second and one at the start.
        let admitted = (0..10_000)
            .filter(|ms| limiter.try_acquire(start + MS * *ms))
            .count();
        assert!((1000..=1001).contains(&admitted), "{admitted}");

        let ramping = WriteRate {
            per_second: 1000,
            ramp_up: Duration::from_secs(10),
        };
        let mut limiter = WriteRateLimiter::new(ramping, start);
        assert_eq!(limiter.rate(start), WriteRateLimiter::MIN_RATE);
        assert_eq!(limiter.rate(start + Duration::from_secs(5)), 500.0);
        assert_eq!(limiter.rate(start + Duration::from_secs(60)), 1000.0);
        let first_second = (0..1000)
            .filter(|ms| limiter.try_acquire(start + MS * *ms))
            .count();
        // The rate grows from 1 to 100 per second over the first second: about 50.
        assert!((40..=60).contains(&first_second), "{first_second}");
        let refusal = limiter.refusal(start + Duration::from_secs(1));
        assert!(
            refusal.contains("flow-control.write.limit = 1000")
                && refusal.contains("100 per second while it ramps up"),
            "{refusal}"
        );
        assert_eq!(
            WriteRate::from_config(&rill_config::WriteLimitConfig {
                enabled: true,
                limit: 0,
                ..Default::default()
            }),
            None,
            "0 is unlimited"
        );
    }

    #[test]
    fn vegas_grows_without_queueing_and_shrinks_with_it() {
        let mut vegas = VegasLimit::new(&VegasConfig::default());
        let start = vegas.limit();
        vegas.on_sample(10 * MS, 20, false); // sets the no-load latency
        vegas.on_sample(10 * MS, 20, false);
        assert!(vegas.limit() > start, "no queue: grows");
        let grown = vegas.limit();
        for _ in 0..20 {
            vegas.on_sample(100 * MS, 1000, false);
        }
        assert!(vegas.limit() < grown, "10x latency: shrinks");
    }

    #[test]
    fn gradients_shrink_when_latency_rises() {
        let mut g = GradientLimit::new(&GradientConfig::default());
        let mut g2 = Gradient2Limit::new(&Gradient2Config::default());
        for _ in 0..50 {
            g.on_sample(5 * MS, 100, false);
            g2.on_sample(5 * MS, 100, false);
        }
        let (before, before2) = (g.limit(), g2.limit());
        assert!(before > 20 && before2 > 20, "{before} {before2}");
        for _ in 0..50 {
            g.on_sample(200 * MS, 1000, false);
            g2.on_sample(200 * MS, 1000, false);
        }
        assert!(g.limit() < before, "{} < {before}", g.limit());
        assert!(g2.limit() < before2, "{} < {before2}", g2.limit());
        assert!(g.limit() >= GradientConfig::default().min_limit);
    }
}
