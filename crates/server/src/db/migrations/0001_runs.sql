-- One row per accepted run. The columns are what the leaderboard and the GPU pages filter and
-- sort by; `document` is the result JSON as it was received.
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    -- sha256 of the run's timing figures: the same run sent again under another id.
    figures TEXT NOT NULL UNIQUE,
    received_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    workload TEXT NOT NULL,
    standard BIGINT NOT NULL,
    gpu TEXT NOT NULL,
    backend TEXT NOT NULL,
    precision TEXT NOT NULL,
    memory_profile TEXT NOT NULL,
    model_key TEXT NOT NULL,
    score BIGINT,
    images_per_minute DOUBLE PRECISION NOT NULL,
    seconds_per_image DOUBLE PRECISION NOT NULL,
    steps_per_second DOUBLE PRECISION NOT NULL,
    vram_peak_bytes BIGINT,
    avg_power_w DOUBLE PRECISION,
    -- 1: every image matches the reference hashes of its model revision, 0: some do not,
    -- NULL: the service has no reference for that revision.
    reference_match BIGINT,
    document TEXT NOT NULL
);
CREATE INDEX runs_board ON runs (workload, backend, precision, memory_profile, gpu);
CREATE INDEX runs_gpu ON runs (gpu, received_at);
