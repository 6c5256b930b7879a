"""tf.estimator 2.15's `canned/timeseries/estimators`: importable (programs and
2.15's tests import it beside the head), but its names are not provided
yet: TimeSeriesRegressor and LSTMAutoRegressor ran only with TF1 behaviour in
2.15 (its tests of them skip under TF2) and are not implemented over
estimator_rt. Using one raises an AttributeError saying so.
"""
