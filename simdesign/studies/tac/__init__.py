"""How many system pairs a paired or an unpaired test separates in a TAC-sized study (Rankel and colleagues, 2011)."""
