"""tf.estimator 2.15's `hooks.fake_summary_writer`: a FileWriter for tests.

Libraries' tests (and TensorFlow's hook tests) check what a
SessionRunHook writes with `FakeSummaryWriter`: made directly and given to
a hook (`StepCounterHook(summary_writer=...)`), or installed in place of
`tf.compat.v1.summary.FileWriter` (which `FileWriterCache.get` then
makes), it keeps what is added to it, by step, and `assert_summaries`
compares that with what the test expects. It fakes TensorFlow's
FileWriter, which graph-mode hooks and sessions write with; the runtime's
own event files (estimator_rt/summaries.py) are written without it.
"""

from tensorflow.core.framework import summary_pb2
from tensorflow.python.framework import test_util
from tensorflow.python.summary.writer import writer
from tensorflow.python.summary.writer import writer_cache

from estimator_rt.errors import UserInputError


def _check_step(global_step):
  if global_step is not None and global_step < 0:
    raise UserInputError(f'Invalid global_step {global_step}.')


class FakeSummaryWriter:
  """Keeps what is written to it: `summaries` ({step: [Summary, ...]}),
  added graphs, meta graphs, session logs and run metadata.

  Args:
    logdir: the directory it stands for (`assert_summaries` checks it).
    graph: the graph it was given (`assert_summaries` checks it).
  """

  # The FileWriter class `install` replaced, until `uninstall`.
  _replaced_summary_writer = None

  @classmethod
  def install(cls):
    """Makes tf.compat.v1.summary.FileWriter (and FileWriterCache's) this
    class.

    Raises:
      ValueError: it is installed already.
    """
    if cls._replaced_summary_writer:
      raise UserInputError('FakeSummaryWriter already installed.')
    cls._replaced_summary_writer = writer.FileWriter
    writer.FileWriter = cls
    writer_cache.FileWriter = cls

  @classmethod
  def uninstall(cls):
    """Gives FileWriter back.

    Raises:
      ValueError: it is not installed.
    """
    if not cls._replaced_summary_writer:
      raise UserInputError('FakeSummaryWriter not installed.')
    writer.FileWriter = cls._replaced_summary_writer
    writer_cache.FileWriter = cls._replaced_summary_writer
    cls._replaced_summary_writer = None

  def __init__(self, logdir, graph=None):
    self._logdir = logdir
    self._graph = graph
    self._summaries = {}
    self._added_graphs = []
    self._added_meta_graphs = []
    self._added_session_logs = []
    self._added_run_metadata = {}

  @property
  def summaries(self):
    """{global step: [the Summary protos added at that step]}."""
    return self._summaries

  def assert_summaries(self, test_case, expected_logdir=None,
                       expected_graph=None, expected_summaries=None,
                       expected_added_graphs=None,
                       expected_added_meta_graphs=None,
                       expected_session_logs=None):
    """Asserts, with `test_case`'s assertions, each expectation given:
    `expected_summaries` is {step: {tag: simple_value}} of every value
    added at that step ('global_step/sec', whose count depends on timing,
    left out)."""
    if expected_logdir is not None:
      test_case.assertEqual(expected_logdir, self._logdir)
    if expected_graph is not None:
      test_case.assertTrue(expected_graph is self._graph)
    for step, expected in (expected_summaries or {}).items():
      test_case.assertTrue(
          step in self._summaries,
          msg=f'Missing step {step} from {self._summaries.keys()}.')
      actual = {value.tag: value.simple_value
                for summary in self._summaries[step]
                for value in summary.value
                if value.tag != 'global_step/sec'}
      test_case.assertEqual(expected, actual)
    if expected_added_graphs is not None:
      test_case.assertEqual(expected_added_graphs, self._added_graphs)
    if expected_added_meta_graphs is not None:
      test_case.assertEqual(len(expected_added_meta_graphs),
                            len(self._added_meta_graphs))
      for expected, actual in zip(expected_added_meta_graphs,
                                  self._added_meta_graphs):
        test_util.assert_meta_graph_protos_equal(test_case, expected, actual)
    if expected_session_logs is not None:
      test_case.assertEqual(expected_session_logs, self._added_session_logs)

  def add_summary(self, summ, current_global_step):
    """Keeps `summ` (a Summary, or one serialized) at the step."""
    if isinstance(summ, bytes):
      summ = summary_pb2.Summary.FromString(summ)
    self._summaries.setdefault(current_global_step, []).append(summ)

  def add_graph(self, graph, global_step=None, graph_def=None):
    _check_step(global_step)
    if graph_def is not None:
      raise UserInputError(f'Unexpected graph_def {graph_def}.')
    self._added_graphs.append(graph)

  def add_meta_graph(self, meta_graph_def, global_step=None):
    _check_step(global_step)
    self._added_meta_graphs.append(meta_graph_def)

  def add_session_log(self, session_log, global_step=None):
    del global_step  # Depends on timing: not kept.
    self._added_session_logs.append(session_log)

  def add_run_metadata(self, run_metadata, tag, global_step=None):
    _check_step(global_step)
    self._added_run_metadata[tag] = run_metadata

  def flush(self):
    pass

  def reopen(self):
    pass

  def close(self):
    pass
