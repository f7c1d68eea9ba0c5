//! Submissions per client address: a token bucket each, refilled continuously. Each server
//! instance keeps its own buckets (behind a load balancer, a client's limit is per instance).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

pub struct RateLimit {
    /// Submissions a client may make in a burst, and per minute after it; 0: no limit.
    per_minute: u32,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets kept before full ones are dropped (a full bucket is the same as none).
const MAX_BUCKETS: usize = 100_000;

impl RateLimit {
    pub fn new(per_minute: u32) -> RateLimit {
        RateLimit {
            per_minute,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes a token for `client` at `now`; `Err(seconds)` says how long until one is free.
    pub fn take(&self, client: IpAddr, now: Instant) -> Result<(), u64> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let capacity = self.per_minute as f64;
        let per_second = capacity / 60.0;
        let Ok(mut buckets) = self.buckets.lock() else {
            return Ok(());
        };
        if buckets.len() >= MAX_BUCKETS {
            buckets.retain(|_, b| {
                b.tokens + now.duration_since(b.at).as_secs_f64() * per_second < capacity
            });
        }
        let bucket = buckets.entry(client).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_second).min(capacity);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - bucket.tokens) / per_second).ceil() as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_burst_then_the_refill_rate_per_address() {
        let limit = RateLimit::new(3);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let t = Instant::now();
        assert!((0..3).all(|_| limit.take(a, t).is_ok()));
        assert_eq!(limit.take(a, t), Err(20));
        assert!(
            limit.take(b, t).is_ok(),
            "another address has its own bucket"
        );
        assert!(limit.take(a, t + Duration::from_secs(20)).is_ok());
        assert!(limit.take(a, t + Duration::from_secs(21)).is_err());
        let unlimited = RateLimit::new(0);
        assert!((0..1000).all(|_| unlimited.take(a, t).is_ok()));
    }
}
