"""Annotation methods (Likert, Rank, and any a user registers): everything that differs between them.

:mod:`simdesign.methods.base` holds the interface and the registry; each method is one module that
defines and registers it (:mod:`~simdesign.methods.likert`, :mod:`~simdesign.methods.rank`). A plug-in
method is a subclass of :class:`AnnotationMethod` passed to :func:`register_method` (docs/how-to/extend.md).
"""
from simdesign.methods.base import (REGISTERED, AnnotationMethod, all_methods, config_name, default_method,  # noqa: F401
                                    get_method,
                                    method_names, register_method, register_step, registered, split_result_label,
                                    unregister_method)
from simdesign.methods import likert, rank, pairwise  # noqa: F401,E402 -- registers the built-in methods, Likert first
