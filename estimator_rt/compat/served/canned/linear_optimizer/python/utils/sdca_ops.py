"""tensorflow_estimator.python.estimator.canned.linear_optimizer.python.
utils.sdca_ops, over estimator_rt's SDCA model
(estimator_rt/estimator/canned/sdca_model.py)."""

from estimator_rt.estimator.canned import sdca_model

_SDCAModel = sdca_model.SDCAModel
_SparseFeatureColumn = sdca_model.SparseFeatureColumn
