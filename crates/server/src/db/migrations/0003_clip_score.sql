-- --quality: the run's mean CLIP score and the CLIP model that gave it (NULL without one, or for
-- synthetic weights, whose score means nothing). A run is judged against the others of its
-- workload scored by the same model.
ALTER TABLE runs ADD COLUMN clip_score_mean DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN clip_model TEXT;
