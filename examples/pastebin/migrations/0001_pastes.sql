-- The pastes, and a record of each cron sweep (when, and how many expired pastes it removed).
CREATE TABLE pastes (
  id TEXT PRIMARY KEY,
  body TEXT NOT NULL,
  created_at INTEGER NOT NULL, -- ms since the epoch
  expires_at INTEGER           -- ms since the epoch; NULL: never
);
CREATE INDEX pastes_by_expiry ON pastes (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE sweeps (
  at INTEGER PRIMARY KEY,      -- the cron tick (controller.scheduledTime)
  removed INTEGER NOT NULL
);
