"""Every bad input is one `error: ...` line and exit 2, before anything is
written: step counts past their bounds, seeds NumPy refuses, input_fns and
model_fns that raise, oversized or malformed TF_CONFIG and --remote_cluster,
batch sizes larger than the data, float labels for a classifier.

The validation functions are tested in-process, where each case costs
microseconds; a handful of cases per kind also go through the binary against
a --model_dir that does not exist yet, which must still not exist after.
"""

import json
import os
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from conftest import run_python
from estimator_rt.cluster import tf_config as cluster
from estimator_rt.core import errors
from estimator_rt.inputs import pipeline as inputs
from estimator_rt.core import user_fns
from estimator_rt.training.eager.model import EagerModel
from estimator_rt.training.eager.variable_store import VariableStore
from input_fns import digits
from input_fns import files
from input_fns import synthetic
from input_fns import tfds as tfds_input
from model_fns import cnn
from model_fns import linear
from model_fns import mlp

# Long enough that printing it whole would drown the error line.
HUGE = 100_000

USER_FNS = textwrap.dedent('''
    import numpy as np
    import tensorflow as tf
    import keras
    import estimator_rt as ert

    def _data(n=32):
      rng = np.random.RandomState(0)
      x = rng.randn(n, 4).astype('float32')
      return x, (x.sum(axis=1) > 0).astype('int64')

    def input_fn(params):
      x, y = _data()
      return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(8)

    def raising_input_fn(params):
      raise ValueError('boom')

    def missing_file_input_fn(params):
      with open('/nonexistent/estimator_rt/data.csv') as f:
        return f.read()

    def float_label_input_fn(params):
      x, y = _data()
      return tf.data.Dataset.from_tensor_slices(
          ({'x': x}, y.astype('float32') + 0.5)).repeat().batch(8)

    def model_fn(features, labels, mode, params):
      logits = keras.layers.Dense(2)(features['x'])
      loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
          labels, logits, from_logits=True))
      return ert.EstimatorSpec(mode, loss=loss,
                               optimizer=keras.optimizers.SGD(0.1))

    def raising_model_fn(features, labels, mode, params):
      raise RuntimeError('model boom')

    def eval_raising_model_fn(features, labels, mode, params):
      if mode == ert.ModeKeys.EVAL:
        raise RuntimeError('eval boom')
      return model_fn(features, labels, mode, params)

    # Mistakes only tracing the training loop finds (the eager build call
    # runs them happily).
    def variable_free_loss_model_fn(features, labels, mode, params):
      keras.layers.Dense(2)(features['x'])
      loss = tf.reduce_mean(tf.cast(labels, tf.float32))
      return ert.EstimatorSpec(mode, loss=loss,
                               optimizer=keras.optimizers.SGD(0.1))

    _calls = []

    def new_variables_model_fn(features, labels, mode, params):
      _calls.append(1)
      extra = tf.Variable(tf.zeros([len(_calls)]), name='extra')
      spec = model_fn(features, labels, mode, params)
      return ert.EstimatorSpec(mode, loss=spec.loss + tf.reduce_sum(extra),
                               optimizer=spec.optimizer)

    def python_if_model_fn(features, labels, mode, params):
      logits = keras.layers.Dense(2)(features['x'])
      if tf.reduce_mean(logits) > 0:
        logits = -logits
      loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
          labels, logits, from_logits=True))
      return ert.EstimatorSpec(mode, loss=loss,
                               optimizer=keras.optimizers.SGD(0.1))
''')


def _one_line(message, *fragments, max_chars=600):
  """Checks an error message: one short line holding every fragment."""
  assert '\n' not in message, message
  assert len(message) <= max_chars, (len(message), message[:300])
  for fragment in fragments:
    assert fragment in message, (fragment, message)


# --- errors.check_count and errors.shorten ----------------------------------


@pytest.mark.parametrize('value,maximum,fragments', [
    (2**53 + 1, errors.MAX_COUNT, ['max_steps=9007199254740993',
                                   'maximum 9007199254740992', 'float64']),
    (2**63 - 1, errors.MAX_COUNT, ['max_steps=9223372036854775807',
                                   'maximum 9007199254740992']),
    (2**31, errors.MAX_INT32, ['max_steps=2147483648', 'maximum 2147483647',
                               'tf.int32']),
    (10**5000, errors.MAX_COUNT, ['max_steps=<an integer of 16610 bits>']),
    (0, errors.MAX_COUNT, ['max_steps=0', '> 0']),
    (1.5, errors.MAX_COUNT, ['max_steps=1.5', 'integer']),
    (True, errors.MAX_COUNT, ['max_steps=True', 'integer']),
    ('x' * HUGE, errors.MAX_COUNT, ['max_steps=', f'({HUGE} characters)']),
], ids=['past_2_53', 'int64_max', 'past_int32', 'int_of_5000_digits', 'zero',
        'float', 'bool', 'huge_string'])
def test_check_count_names_the_argument_the_value_and_the_bound(
    value, maximum, fragments):
  with pytest.raises(errors.UserInputError) as raised:
    errors.check_count('max_steps', value, maximum=maximum)
  _one_line(str(raised.value), *fragments)


def test_check_count_accepts_its_bounds():
  errors.check_count('steps', errors.MAX_COUNT)
  errors.check_count('steps', errors.MAX_INT32, maximum=errors.MAX_INT32)
  errors.check_count('steps', 1)
  errors.check_count('steps', 0, allow_zero=True)
  errors.check_count('steps', None)


class _BrokenRepr:

  def __repr__(self):
    raise RuntimeError('no repr')


@pytest.mark.parametrize('value', [
    'a' * HUGE, ['h:1'] * 10**6, [[[[['deep'] * 50] * 50] * 50]] * 50,
    {'k' * HUGE: 'v' * HUGE}, 10**5000, -10**5000, _BrokenRepr(),
], ids=['string', 'long_list', 'nested', 'dict', 'huge_int', 'huge_negative',
        'broken_repr'])
def test_shorten_is_short_for_any_value(value):
  text = errors.shorten(value)
  assert len(text) < 130 and '\n' not in text, text


def test_shorten_keeps_short_values_as_repr():
  for value in ('h:2222', 2222, None, ['a', 1], {'x': 1}):
    assert errors.shorten(value) == repr(value)


# --- RunConfig ---------------------------------------------------------------


@pytest.mark.parametrize('changes,fragments', [
    ({'tf_random_seed': 1.0}, ['tf_random_seed=1.0']),
    ({'steps_per_loop': 2**31}, ['steps_per_loop=2147483648', 'tf.int32']),
    # 2.15's Saver refused it too (at the start of training).
    ({'keep_checkpoint_max': 2**63}, ['keep_checkpoint_max=', 'maximum']),
    ({'save_checkpoints_secs': float('nan')},
     ['save_checkpoints_secs=nan', 'finite']),
    ({'remote_connect_timeout_secs': float('inf')},
     ['remote_connect_timeout_secs=inf', 'finite']),
    ({'model_dir': '/tmp/a\0b'}, ['model_dir=', 'NUL']),
    ({'model_dir': '/tmp/' + 'd' * 300}, ['model_dir=', 'too long', '255']),
    ({'model_dir': '/tmp/d/' * 700}, ['model_dir=', 'too long', '4095']),
])
def test_run_config_refuses_out_of_range_fields(changes, fragments):
  with pytest.raises(errors.UserInputError) as raised:
    ert.RunConfig(task_info=None, **changes)
  _one_line(str(raised.value), 'RunConfig: ', *fragments)


def test_run_config_accepts_the_bounds():
  for seed in (0, -1, -2**63 - 1, 2**70):  # Any int, as 2.15 took.
    ert.RunConfig(task_info=None, tf_random_seed=seed)
  config = ert.RunConfig(task_info=None, tf_random_seed=2**32 - 1,
                         steps_per_loop=2**31 - 1,
                         save_checkpoints_steps=2**53)
  assert config.steps_per_loop == 2**31 - 1
  # Larger step counts, as 2.15 took them (sys.maxsize: "never"), are kept
  # as given and count as the largest (errors.as_count).
  config = ert.RunConfig(task_info=None, save_checkpoints_steps=2**53 + 1,
                         save_summary_steps=2**63, log_step_count_steps=2**63)
  assert (config.save_checkpoints_steps, config.save_summary_steps,
          config.log_step_count_steps) == (2**53 + 1, 2**63, 2**63)
  assert errors.as_count(config.save_summary_steps) == errors.MAX_COUNT
  assert errors.as_count(2**40, cap=errors.MAX_INT32) == errors.MAX_INT32


# --- TF_CONFIG and remote_cluster --------------------------------------------


def _tf_config(addresses, **task):
  return json.dumps({'cluster': {'worker': addresses},
                     'task': {'type': 'worker', 'index': 0, **task}})


BAD_CLUSTERS = [
    ('host_100k_chars', _tf_config(['a' * HUGE + ':2222']),
     ['the host is 100000 characters', 'at most 253', ':2222',
      f'({HUGE + 5} characters)']),
    ('host_254_chars', _tf_config(['a.' * 126 + 'bc:2222']),
     ['the host is 254 characters']),
    ('label_64_chars', _tf_config(['a' * 64 + '.example.com:2222']),
     ['is not a host name label', '(64 characters)']),
    ('label_starts_with_hyphen', _tf_config(['-host:2222']),
     ["'-host' is not a host name label"]),
    ('non_ascii_host', _tf_config(['hôst:2222']),
     ["'hôst' is not a host name label"]),
    ('space_in_host', _tf_config(['my host:2222']),
     ["'my host' is not a host name label"]),
    ('bad_ipv4', _tf_config(['999.1.1.1:2222']),
     ["'999.1.1.1' is neither a host name nor an IPv4 address"]),
    ('numeric_host', _tf_config(['1234:2222']),
     ["'1234' is neither a host name nor an IPv4 address"]),
    ('bad_ipv6', _tf_config(['[::g]:2222']),
     ["'::g' in brackets is not an IPv6 address"]),
    ('unbracketed_ipv6', _tf_config(['::1:2222']),
     ['IPv6 host goes in brackets']),
    ('port_0', _tf_config(['h:0']), ["port '0' is not a number in 1-65535"]),
    ('port_65536', _tf_config(['h:65536']), ["port '65536'"]),
    ('port_huge', _tf_config(['h:' + '9' * HUGE]),
     ['port', 'is not a number in 1-65535']),
    ('port_unicode_digits', _tf_config(['h:\u0662\u0662']), ['port']),
    ('no_port', _tf_config(['h']), ['there is no ":port"']),
    ('address_a_number', _tf_config([2222]),
     ["cluster['worker'][0]=2222 must be a \"host:port\" string"]),
    ('address_nested_junk', _tf_config([[['h:1'] * HUGE]]),
     ["cluster['worker'][0]=[['h:1', 'h:1', 'h:1', 'h:1', ...]]",
      'must be a "host:port" string']),
    ('addresses_an_object', _tf_config({'x': 'y' * HUGE}),
     ["cluster['worker']={'x':", 'must be a non-empty list']),
    ('too_many_tasks', _tf_config([f'h{i}:1' for i in range(10_001)]),
     ['lists 10001 tasks', 'at most 10000']),
    ('text_too_long', _tf_config(['h:1']) + ' ' * (1 << 20),
     ['TF_CONFIG is 1048', 'at most 1048576']),
    ('nested_too_deeply', '[' * HUGE, ['nested too deeply']),
    ('number_of_5000_digits', '{"cluster": ' + '9' * 5000 + '}',
     ['TF_CONFIG is not usable JSON (Exceeds the limit (4300 digits)',
      '(5013 characters)']),
    ('index_of_5000_digits', _tf_config(['h:1'], index='9' * 5000),
     ['TF_CONFIG task index=', 'out of range', '(5000 characters)']),
    ('index_huge_int', _tf_config(['h:1'], index=10**100),
     ['TF_CONFIG task index=<an integer of 333 bits> is out of range']),
    ('type_huge', _tf_config(['h:1'], type='w' * HUGE),
     ['TF_CONFIG task type=', f'({HUGE} characters)', 'is not one of']),
    ('type_a_list', _tf_config(['h:1'], type=['worker'] * HUGE),
     ['TF_CONFIG task type=', f'({HUGE} items)']),
    ('unknown_job_huge', json.dumps({'cluster': {'j' * HUGE: ['h:1']},
                                     'task': {'type': 'worker', 'index': 0}}),
     ['unknown job', f'({HUGE} characters)']),
    ('rpc_layer_junk', json.dumps({'cluster': {'worker': ['h:1']},
                                   'task': {'type': 'worker', 'index': 0},
                                   'rpc_layer': 'grpc ' * HUGE}),
     ['TF_CONFIG rpc_layer=', 'protocol name']),
]


@pytest.mark.parametrize('raw,fragments', [c[1:] for c in BAD_CLUSTERS],
                         ids=[c[0] for c in BAD_CLUSTERS])
def test_bad_tf_config_is_one_short_line(raw, fragments):
  with pytest.raises(cluster.ClusterConfigError) as raised:
    cluster.parse_tf_config(raw)
  _one_line(str(raised.value), *fragments)


@pytest.mark.parametrize('address', [
    'localhost:2222', 'host-1.example.com:1', 'host-1.example.com.:1',
    'my_service:2', '10.0.0.1:65535', '[::1]:3', '[fe80::1%eth0]:4',
    'a' * 63 + '.' + 'b' * 63 + ':5', 'x' * 63 + ('.' + 'y' * 61) * 3 + ':6',
])
def test_valid_addresses_are_accepted(address):
  assert cluster.check_address(address, where='a') == address


def test_remote_cluster_is_validated_like_tf_config():
  with pytest.raises(cluster.ClusterConfigError) as raised:
    cluster.client_task({'worker': ['a' * HUGE + ':2222'], 'ps': ['h:1']})
  _one_line(str(raised.value), "remote_cluster['worker'][0]=",
            'the host is 100000 characters')
  with pytest.raises(cluster.ClusterConfigError) as raised:
    cluster.client_task({'worker': [f'h:{i % 60000 + 1}'
                                    for i in range(10**6)]})
  _one_line(str(raised.value), 'remote_cluster lists 1000000 tasks')
  with pytest.raises(cluster.ClusterConfigError) as raised:
    cluster.client_task([['h:1']] * HUGE)
  _one_line(str(raised.value), 'remote_cluster must be a JSON object',
            f'({HUGE} items)')


# --- input_fns and model_fns that raise --------------------------------------


def _raising_input_fn(params):
  del params
  raise ValueError('boom')


def _missing_file_input_fn(params):
  del params
  with open('/nonexistent/estimator_rt/data.csv') as f:
    return f.read()


def test_an_input_fn_that_raises_is_one_input_fn_error():
  with pytest.raises(ert.InputFnError) as raised:
    user_fns.call_input_fn(_raising_input_fn, {}, role='train input_fn')
  _one_line(str(raised.value),
            f'train input_fn {__name__}:_raising_input_fn raised ValueError: '
            'boom (at test_bad_input.py:')
  assert isinstance(raised.value.__cause__, ValueError)
  with pytest.raises(ert.InputFnError) as raised:
    user_fns.call_input_fn(_missing_file_input_fn, {})
  _one_line(str(raised.value), '_missing_file_input_fn raised '
            'FileNotFoundError', '/nonexistent/estimator_rt/data.csv')
  assert isinstance(raised.value.__cause__, FileNotFoundError)


def test_a_huge_exception_message_is_cut():
  def input_fn():
    raise ValueError('line\n' * HUGE)

  with pytest.raises(ert.InputFnError) as raised:
    user_fns.call_input_fn(input_fn, {})
  _one_line(str(raised.value), 'raised ValueError: line line',
            f'({5 * HUGE - 1} characters)')


def test_a_dataset_whose_first_batch_fails_on_its_data_is_an_input_fn_error(
    tmp_path):
  missing = str(tmp_path / 'missing.tfrecord')

  def input_fn():
    return tf.data.TFRecordDataset(missing).batch(2)

  with pytest.raises(ert.InputFnError) as raised:
    inputs.make_input(tf.distribute.get_strategy(), input_fn, {},
                      role='train input_fn', sample_only=True)
  _one_line(str(raised.value), 'train input_fn', 'input_fn',
            'reading its first batch failed with NotFoundError', missing)


def _graph(model_fn):
  x = tf.constant(np.ones((4, 3), np.float32))
  y = tf.constant(np.zeros((4,), np.int64))
  return EagerModel(model_fn=model_fn, mode=ert.ModeKeys.TRAIN, params={},
                    config=ert.RunConfig(task_info=None),
                    strategy=tf.distribute.get_strategy(),
                    sample=({'x': x}, y))


def _raising_model_fn(features, labels, mode):
  del features, labels, mode
  raise RuntimeError('model boom')


def test_a_model_fn_raising_a_python_exception_is_one_model_fn_error():
  with pytest.raises(ert.ModelFnError) as raised:
    _graph(_raising_model_fn)
  # The model_fn's own words first, as 2.15 let its exception through.
  _one_line(str(raised.value),
            f'model boom (model_fn {__name__}:_raising_model_fn failed in '
            "mode 'train' on features {x: (4, 3)} and labels (4,): "
            'RuntimeError (at test_bad_input.py:')
  assert isinstance(raised.value.__cause__, RuntimeError)


@pytest.mark.parametrize('error', [
    tf.errors.ResourceExhaustedError(None, None, 'out of memory'),
    tf.errors.UnavailableError(None, None, 'peer lost'),
    MemoryError(),
])
def test_a_runtime_failure_inside_a_model_fn_is_not_blamed_on_it(error):
  def model_fn(features, labels):
    del features, labels
    raise error

  with pytest.raises(type(error)) as raised:
    _graph(model_fn)
  assert not isinstance(raised.value, errors.UserInputError)


# --- batch sizes of the bundled input_fns ------------------------------------


@pytest.mark.parametrize('input_fn,params,fragments', [
    (digits.train_input_fn, {'batch_size': 1439},
     ['input_fns.digits.train_input_fn', "params['batch_size']=1439",
      'the digits train split (1438 examples)']),
    (digits.train_input_fn, {'batch_size': 10**9},
     ["params['batch_size']=1000000000", '(1438 examples)']),
    (digits.eval_input_fn, {'batch_size': 360},
     ['input_fns.digits.eval_input_fn', '(359 examples)']),
    (synthetic.linear_input_fn, {'batch_size': 1025},
     ['input_fns.synthetic.linear_input_fn', "params['batch_size']=1025",
      "params['num_examples'] (1024 examples)"]),
    (synthetic.classification_input_fn,
     {'batch_size': 11, 'num_examples': 10}, ['(10 examples)']),
    (synthetic.images_input_fn, {'batch_size': 257}, ['(256 examples)']),
    (synthetic.images_input_fn, {'batch_size': 8, 'num_examples': 10**9},
     ['input_fns.synthetic.images_input_fn', 'values',
      "params['num_examples']=1000000000"]),
    (synthetic.linear_input_fn, {'batch_size': 8, 'num_features': 10**9},
     ['input_fns.synthetic.linear_input_fn', 'values']),
    (files.csv_input_fn, {'batch_size': 2**24 + 1, 'file_pattern': '/none'},
     ["params['batch_size']=16777217", 'from 1 to 16777216']),
    (files.tfrecord_input_fn, {'batch_size': 0, 'file_pattern': '/none'},
     ["params['batch_size']=0"]),
    (files.csv_input_fn, {'batch_size': 8.0, 'file_pattern': '/none'},
     ["params['batch_size']=8.0"]),
    (tfds_input.tfds_input_fn, {'batch_size': -1, 'dataset': 'mnist'},
     ['input_fns.tfds.tfds_input_fn', "params['batch_size']=-1"]),
    (digits.train_input_fn, {'batch_size': '128'},
     ["params['batch_size']='128'", 'integer']),
    (synthetic.linear_input_fn, {'batch_size': True}, ['=True']),
])
def test_bundled_input_fns_refuse_a_batch_size_the_data_cannot_fill(
    input_fn, params, fragments):
  with pytest.raises(ert.InputFnError) as raised:
    input_fn(params)
  _one_line(str(raised.value), *fragments)


def test_a_batch_of_the_whole_data_set_is_accepted():
  batch = next(iter(digits.eval_input_fn({'batch_size': 359})))
  assert batch[1].shape == (359,)
  batch = next(iter(synthetic.linear_input_fn(
      {'batch_size': 16, 'num_examples': 16})))
  assert batch[1].shape == (16,)


# --- float labels for the bundled classifiers --------------------------------


def _trace_loss(model_fn, features_spec, labels_dtype):
  """Traces model_fn's TRAIN loss (after an eager build call), as the
  runtime does: the label dtype is checked when tracing, once."""
  store = VariableStore()
  zeros = tf.zeros([2, *features_spec.shape[1:]], features_spec.dtype)
  with store.recording():
    model_fn({'x': zeros}, tf.zeros([2], tf.int64), ert.ModeKeys.TRAIN, {})

  def loss(x, y):
    with store.reusing():
      return model_fn({'x': x}, y, ert.ModeKeys.TRAIN, {}).loss

  return tf.function(loss, autograph=False).get_concrete_function(
      features_spec, tf.TensorSpec([None], labels_dtype))


@pytest.mark.parametrize('model_fn,features_spec', [
    (mlp.model_fn, tf.TensorSpec([None, 5], tf.float32)),
    (cnn.model_fn, tf.TensorSpec([None, 8, 8, 1], tf.float32)),
])
@pytest.mark.parametrize('dtype', [tf.float32, tf.float64, tf.bool])
def test_classifiers_refuse_non_integer_labels_at_trace_time(
    model_fn, features_spec, dtype):
  with pytest.raises(ert.ModelFnError) as raised:
    _trace_loss(model_fn, features_spec, dtype)
  _one_line(str(raised.value), 'labels must be integer class ids',
            f'got dtype {dtype.name}', 'Cast them to integer class ids in '
            'the input_fn', 'tf.cast(labels, tf.int64)')


@pytest.mark.parametrize('dtype', [tf.int32, tf.int64, tf.uint8])
def test_classifiers_accept_integer_labels(dtype):
  _trace_loss(mlp.model_fn, tf.TensorSpec([None, 5], tf.float32), dtype)


def test_the_linear_regressor_still_takes_float_labels():
  x = tf.constant(np.ones((4, 2), np.float32))
  spec = linear.model_fn({'x': x}, tf.constant([0.5, 1.5, 2.5, 3.5]),
                         ert.ModeKeys.TRAIN, {})
  assert np.isfinite(float(spec.loss))


# --- through the binary: exit 2, one line, model_dir never created -----------


@pytest.fixture
def fns(tmp_path):
  path = tmp_path / 'user_fns.py'
  path.write_text(USER_FNS)
  return str(path)


def _binary(args, *, env=None, timeout=180):
  return run_python(['-m', 'estimator_rt.main'] + list(args), env=env,
                    timeout=timeout)


def _assert_refused(result, *fragments):
  assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
  lines = [l for l in result.stderr.splitlines() if l.startswith('error: ')]
  assert len(lines) == 1, result.stderr[-3000:]
  assert 'Traceback' not in result.stderr, result.stderr[-3000:]
  _one_line(lines[0], *fragments, max_chars=700)


HUGE_HOST_TF_CONFIG = _tf_config(['a' * HUGE + ':2222', 'h:1'])

# (id, flags, TF_CONFIG or None, fragments of the error line). '{fns}' is the
# user functions file above.
BINARY_CASES = [
    ('max_steps_int64_max', ['--max_steps=9223372036854775807'], None,
     ['--max_steps=9223372036854775807', 'maximum 9007199254740992']),
    ('eval_steps_past_int32', ['--eval_steps=2147483648'], None,
     ['--eval_steps=2147483648', 'maximum 2147483647', 'tf.int32']),
    ('steps_per_loop_past_int32', ['--steps_per_loop=4294967296'], None,
     ['--steps_per_loop=4294967296', 'maximum 2147483647']),
    ('negative_seed', ['--tf_random_seed=-1'], None,
     ['--tf_random_seed=-1', '[0, 4294967295]']),
    ('cpu_devices_100k', ['--num_cpu_devices=100000',
                          '--distribution_strategy=mirrored'], None,
     ['--num_cpu_devices=100000', '[1, 256]']),
    ('nan_throttle', ['--throttle_secs=nan'], None,
     ['--throttle_secs=nan', 'finite']),
    ('bind_host_junk', ['--bind_host=' + 'b' * HUGE], None,
     ['--bind_host=', 'the host is 100000 characters']),
    ('params_nested_too_deeply', ['--params=' + '[' * HUGE], None,
     ['--params is JSON nested too deeply']),
    ('tf_config_huge_host_check_config', ['--check_config'],
     HUGE_HOST_TF_CONFIG, ["TF_CONFIG cluster['worker'][0]=",
                           'the host is 100000 characters']),
    ('tf_config_huge_host', [], HUGE_HOST_TF_CONFIG,
     ["TF_CONFIG cluster['worker'][0]=", 'the host is 100000 characters']),
    ('tf_config_huge_index', ['--check_config'],
     _tf_config(['h:1'], index=10**100), ['TF_CONFIG task index=']),
    ('remote_cluster_huge_host',
     ['--distribution_strategy=parameter_server',
      '--remote_cluster=' + json.dumps({'worker': ['w' * HUGE + ':1'],
                                        'ps': ['h:2']})], None,
     ["remote_cluster['worker'][0]=", 'the host is 100000 characters']),
    ('input_fn_raises', ['--input_fn={fns}:raising_input_fn'], None,
     ['train input_fn', 'user_fns.py:raising_input_fn raised ValueError: '
      'boom (at user_fns.py:']),
    ('input_fn_missing_file', ['--input_fn={fns}:missing_file_input_fn'],
     None, ['missing_file_input_fn raised FileNotFoundError',
            '/nonexistent/estimator_rt/data.csv']),
    ('model_fn_raises', ['--model_fn={fns}:raising_model_fn'], None,
     # The model_fn's own words first, as 2.15 let its exception through.
     ['model boom (model_fn', 'user_fns.py:raising_model_fn failed in mode',
      'RuntimeError']),
    # train_and_evaluate builds its evaluation before training writes.
    ('eval_input_fn_raises',
     ['--mode=train_and_evaluate', '--eval_input_fn={fns}:raising_input_fn'],
     None, ['eval input_fn', 'raising_input_fn raised ValueError: boom']),
    ('model_fn_raises_in_eval_only',
     ['--mode=train_and_evaluate', '--model_fn={fns}:eval_raising_model_fn',
      '--eval_input_fn={fns}:input_fn', '--eval_steps=2'],
     None, ['eval_raising_model_fn failed in mode', 'eval boom']),
    ('loss_depends_on_no_variable',
     ['--model_fn={fns}:variable_free_loss_model_fn'], None,
     ['model_fn', 'the loss does not depend on any trainable variable']),
    ('new_variables_on_each_call',
     ['--model_fn={fns}:new_variables_model_fn'], None,
     ['new_variables_model_fn', 'extra']),
    ('python_if_on_a_tensor', ['--model_fn={fns}:python_if_model_fn'], None,
     ['python_if_model_fn failed in mode', 'used as a Python bool',
      'tf.cond', 'user_fns.py:']),
    ('float_labels_for_the_mlp', ['--model_fn=model_fns.mlp:model_fn',
                                  '--input_fn={fns}:float_label_input_fn'],
     None, ['model_fns.mlp.model_fn', 'labels must be integer class ids',
            'float32']),
    ('digits_batch_of_a_billion',
     ['--model_fn=model_fns.mlp:model_fn',
      '--input_fn=input_fns.digits:train_input_fn',
      '--params={"batch_size": 1000000000}'], None,
     ['input_fns.digits.train_input_fn', "params['batch_size']=1000000000",
      '(1438 examples)']),
]


@pytest.mark.parametrize('flag_args,tf_config,fragments',
                         [c[1:] for c in BINARY_CASES],
                         ids=[c[0] for c in BINARY_CASES])
def test_binary_refuses_bad_input_before_creating_model_dir(
    fns, tmp_path, flag_args, tf_config, fragments):
  model_dir = str(tmp_path / 'not_yet' / 'model')
  args = [f'--model_fn={fns}:model_fn', f'--input_fn={fns}:input_fn',
          f'--model_dir={model_dir}', '--mode=train', '--max_steps=4']
  args += [a.replace('{fns}', fns) for a in flag_args]
  env = {'TF_CONFIG': tf_config} if tf_config else {'TF_CONFIG': ''}
  result = _binary(args, env=env)
  _assert_refused(result, *fragments)
  assert not os.path.exists(model_dir)
  assert not os.path.exists(os.path.dirname(model_dir))


@pytest.mark.parametrize('bad', [True, False])
def test_without_model_dir_the_temporary_one_appears_only_once_valid(
    fns, tmp_path, bad):
  # tempfile puts the fresh model_dir under TMPDIR.
  scratch = tmp_path / 'tmp'
  scratch.mkdir()
  input_fn = 'raising_input_fn' if bad else 'input_fn'
  result = _binary([f'--model_fn={fns}:model_fn',
                    f'--input_fn={fns}:{input_fn}', '--mode=train',
                    '--max_steps=2'],
                   env={'TMPDIR': str(scratch), 'TF_CONFIG': ''})
  made = [p for p in os.listdir(scratch) if p.startswith('estimator_rt_')]
  if bad:
    _assert_refused(result, 'raising_input_fn raised ValueError')
    assert not made
  else:
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(made) == 1, made
    assert os.path.isfile(scratch / made[0] / 'model.ckpt-2.index')


@pytest.mark.parametrize('model_fn,features,params,fragments', [
    (mlp.model_fn, np.ones((2, 64), np.float32), {'hidden_units': [10**9]},
     ["params['hidden_units'][0]=1000000000", '64 x 1000000000',
      'at most 268435456']),
    (mlp.model_fn, np.ones((2, 64), np.float32),
     {'hidden_units': [8], 'n_classes': 10**9},
     ["params['n_classes']=1000000000", '8 x 1000000000']),
    (cnn.model_fn, np.ones((2, 8, 8, 1), np.float32), {'n_classes': 10**8},
     ["params['n_classes']=100000000", '64 x 100000000']),
    (mlp.model_fn, np.ones((2, 64), np.float32),
     {'learning_rate': float('nan')},
     ["params['learning_rate'] must be a finite positive number, got nan"]),
])
def test_classifiers_refuse_layers_too_big_to_build(model_fn, features, params,
                                                     fragments):
  with pytest.raises(ert.ModelFnError) as raised:
    model_fn({'x': tf.constant(features)}, tf.constant([0, 1]),
             ert.ModeKeys.TRAIN, params)
  _one_line(str(raised.value), *fragments)


def test_a_user_functions_own_exception_keeps_its_class(tmp_path):
  """tf.estimator 2.15 let a model_fn's or an input_fn's own exception
  through; the runtime's one-line error is also of that class, so code and
  tests catching it (`assertRaises(AttributeError)`) still do."""
  import pickle  # pylint: disable=g-import-not-at-top

  def model_fn(features, labels, mode):
    del features, labels, mode
    raise AttributeError('the model has no layer "dense_9"')

  def input_fn():
    return tf.data.Dataset.from_tensors(
        ({'x': np.ones((2, 1), np.float32)}, np.ones((2, 1), np.float32)))

  def broken_input_fn():
    raise KeyError('no column "age"')

  with pytest.raises(AttributeError) as raised:
    ert.Estimator(model_fn, model_dir=str(tmp_path / 'a')).train(input_fn,
                                                                steps=1)
  assert isinstance(raised.value, ert.ModelFnError)
  assert 'has no layer "dense_9"' in str(raised.value)
  assert len(str(raised.value).splitlines()) == 1
  again = pickle.loads(pickle.dumps(raised.value))
  assert isinstance(again, AttributeError) and str(again) == str(raised.value)
  with pytest.raises(KeyError) as raised:
    ert.Estimator(model_fn, model_dir=str(tmp_path / 'b')).train(
        broken_input_fn, steps=1)
  assert isinstance(raised.value, ert.InputFnError)
  assert str(raised.value).startswith('train input_fn ')
  assert not (tmp_path / 'a').exists() and not (tmp_path / 'b').exists()
