"""GraphLog setups (supervised, multitask, k-shot, continual) as resumable Ray jobs."""
