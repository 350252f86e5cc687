"""The design explorer (``simdesign explore``): a local web page for teaching the design trade-offs.

* :mod:`simdesign.explore.controls` -- the page's controls checked by the config's own rules;
* :mod:`simdesign.explore.live` -- live runs of the engine, refined as trials arrive, cancellable;
* :mod:`simdesign.explore.curves` -- the current design on the precomputed curves (``figures/<name>.csv``);
* :mod:`simdesign.explore.app` -- the Flask application (optional extra ``explore``).
"""
