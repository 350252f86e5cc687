"""Planning: search the smallest study that reaches a target power, and report it."""
