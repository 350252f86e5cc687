"""Rules shared by every generative model: effect scale factors and covariance square roots."""
from __future__ import annotations

import numpy as np

from simdesign.core.errors import ConfigError
from simdesign.core.checks import is_number

# An eigenvalue below -PSD_TOLERANCE * largest eigenvalue means "not a covariance matrix";
# anything above is rounding noise (the paper's coherence matrix has -3e-16).
PSD_TOLERANCE = 1e-8


def effect_scale(effect) -> float:
    """Scale factor for the fixed effects: 'fitted' -> 1, 'zero' -> 0, a number -> itself.

    Parameters
    ----------
    effect : {'fitted', 'zero'} or float

    Returns
    -------
    float
    """
    if isinstance(effect, str):
        if effect == "fitted":
            return 1.0
        if effect == "zero":
            return 0.0
        hint = ""
        try:
            float(effect)
            # PyYAML (YAML 1.1) reads 1e3 or 1.0e3 as text: a float needs a dot and a signed exponent.
            hint = " (YAML read it as text: write a plain number such as 2.5, or e.g. 1.0e+3)"
        except ValueError:
            pass
        raise ConfigError(f"The 'effect' field must be 'zero', 'fitted' or a number (scale factor); "
                          f"got {effect!r}{hint}")
    if not is_number(effect) or not np.isfinite(effect):
        raise ConfigError(f"The 'effect' field must be 'zero', 'fitted' or a number (scale factor); got {effect!r}")
    return float(effect)


def covariance_square_root(cov: np.ndarray, name: str) -> np.ndarray:
    """A matrix L with L @ L.T == cov, for positive semi-definite ``cov``.

    Raises
    ------
    ConfigError
        If an eigenvalue is below -1e-8 times the largest (not PSD).
    """
    eigenvalues, eigenvectors = np.linalg.eigh(cov)
    largest = max(float(eigenvalues.max()), 0.0)
    if eigenvalues.min() < -PSD_TOLERANCE * max(largest, 1e-300):
        raise ConfigError(
            f"The '{name}' matrix is not positive semi-definite: smallest eigenvalue "
            f"{eigenvalues.min():.3g}, largest {largest:.3g} (allowed down to -1e-8 times the largest)"
        )
    return eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None))
