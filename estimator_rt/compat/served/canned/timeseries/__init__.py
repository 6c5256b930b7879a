"""tf.estimator 2.15's `canned/timeseries`: the TF1 time series models'
pieces (feature keys, input statistics, the model base class, state
managers and the heads), as served modules (see
estimator_rt/compat/served/__init__.py). `ar_model` and `estimators` are
importable, but their models (ARModel, TimeSeriesRegressor,
LSTMAutoRegressor) are not provided yet: 2.15 ran them only with TF1
behaviour (its tests of them skip under TF2)."""
