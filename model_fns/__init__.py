"""Ready-made model_fns: each module has `model_fn` and `DEFAULT_PARAMS`.

* `linear`: the distribution-strategy README's linear regressor.
* `mlp`: multi-layer perceptron classifier on dense features.
* `cnn`: small convolutional classifier on images.
"""
