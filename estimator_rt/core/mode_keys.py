"""The three modes a `model_fn` is called in."""


class ModeKeys:
  """Standard names for model modes, the same strings `tf.estimator` used.

  * `TRAIN`: training; the model_fn returns a loss and an optimizer or train_op.
  * `EVAL`: evaluation; the model_fn returns a loss and optional metrics.
  * `PREDICT`: inference; the model_fn returns predictions.
  """

  TRAIN = 'train'
  EVAL = 'eval'
  PREDICT = 'infer'

  ALL = (TRAIN, EVAL, PREDICT)
