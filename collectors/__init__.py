"""Stage 1: turn what the network shows (captures, a live interface, a simulator) into events."""
