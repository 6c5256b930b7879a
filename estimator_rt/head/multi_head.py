"""MultiHead: not provided by estimator_rt yet.

tf.estimator 2.15's MultiHead (several heads on one model, their losses
combined with `loss_weights`) resolves, keeps 2.15's signature, and refuses
in one line when constructed.
"""

from estimator_rt.errors import UserInputError

WHY = ('MultiHead is not supported by estimator_rt yet (see the README\'s '
       'canned estimators section); combine the heads\' losses in a model_fn')


class MultiHead:
  """tf.estimator 2.15's MultiHead signature; refuses (see above)."""

  not_yet = WHY

  def __init__(self, heads, head_weights=None):
    del heads, head_weights
    raise UserInputError(f'{WHY}.')
