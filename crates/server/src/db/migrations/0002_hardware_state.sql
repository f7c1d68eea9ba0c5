-- The hardware's state over the run's timed region, recomputed from its telemetry samples:
-- 'steady' (read, no throttle reason held for a meaningful share), 'throttled', or 'unknown'
-- (no clocks, temperature or throttle reasons could be read, as on most CPUs and on runs
-- stored before this column). The leaderboard ranks throttled runs apart.
ALTER TABLE runs ADD COLUMN hardware_state TEXT NOT NULL DEFAULT 'unknown';
