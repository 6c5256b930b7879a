"""tf.estimator 2.15's `canned/timeseries`, as served modules (see
estimator_rt/compat/served/__init__.py): the time series estimators
(`estimators`: TimeSeriesRegressor, LSTMAutoRegressor), the
autoregressive model (`ar_model`: ARModel, LSTMPredictionModel), their
heads, state managers, input statistics and model base class, and
`saved_model_utils` (filtering and prediction with their exports). TF1
graph code, as 2.15's was: the estimators are canned estimators, run by
the graph engine."""
