"""tf.estimator 2.15's `export.export_output` module: beyond its public
outputs (module_paths.json serves those), the TRAIN export's output and
the base of the supervised ones, over estimator_rt.export."""

from estimator_rt.export import _SupervisedOutput
from estimator_rt.export import TrainOutput

__all__ = ['TrainOutput']
