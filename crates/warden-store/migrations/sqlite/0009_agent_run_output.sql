-- What an agent run's runner printed (stdout and stderr as read), its last 8 KiB.
ALTER TABLE agent_runs ADD COLUMN output TEXT;
