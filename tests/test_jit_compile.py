"""RunConfig(jit_compile=True) / --jit_compile: each training step compiled
with XLA trains to the same weights as without (1e-5)."""

import numpy as np
import pytest

import estimator_rt as ert
from estimator_rt.core.errors import UserInputError
import _models as M

STEPS = 200


def _train(model_dir, *, jit_compile, strategy='default', optimizer='adam'):
  x, y = M.make_data(256, seed=4, noise=0.1)
  est = ert.Estimator(
      M.make_model_fn(optimizer=optimizer, lr=0.02), model_dir=str(model_dir),
      config=M.quiet_config(train_distribute=strategy, steps_per_loop=50,
                            tf_random_seed=1, jit_compile=jit_compile))
  est.train(M.global_input_fn(x, y, batch_size=32), max_steps=STEPS)
  return M.read_model_variables(est.latest_checkpoint())


@pytest.mark.parametrize('strategy,optimizer', [
    ('default', 'adam'), ('default', 'sgd'), ('one_device', 'adam')])
def test_xla_steps_train_to_the_same_weights(tmp_path, strategy, optimizer):
  plain = _train(tmp_path / 'plain', jit_compile=False, strategy=strategy,
                 optimizer=optimizer)
  xla = _train(tmp_path / 'xla', jit_compile=True, strategy=strategy,
               optimizer=optimizer)
  initial = M.initial_weights(0)
  # Training moved the weights, so equal results say something.
  assert not all(np.allclose(a, b) for a, b in zip(plain, initial))
  for a, b in zip(plain, xla):
    np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)


def test_several_replicas_are_refused_before_writing(tmp_path):
  with pytest.raises(UserInputError, match='jit_compile=True with mirrored'):
    _train(tmp_path / 'm', jit_compile=True, strategy='mirrored')
  assert not (tmp_path / 'm').exists()


def test_jit_compile_is_validated():
  with pytest.raises(UserInputError, match="jit_compile='yes'"):
    ert.RunConfig(jit_compile='yes')
