"""The runner: what every study kind shares to compute trials and keep them (issue 27).

It knows nothing of rates, panels or metrics; it imports only :mod:`simdesign.core`.

* :mod:`simdesign.runner.stores`: a results directory claimed by one run at a time (an OS lock), its
  manifest and format, chunk files written atomically and read back with a one-line error when damaged.
"""
