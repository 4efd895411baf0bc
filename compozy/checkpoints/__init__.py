"""File checkpoints: the workspace's state at every turn boundary, in a shadow git repository (shadow)."""
