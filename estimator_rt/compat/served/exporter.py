"""tf.estimator 2.15's `exporter` module, over estimator_rt.exporters.

The exporters are the runtime's (`Exporter`, `LatestExporter`,
`FinalExporter`, `BestExporter`, with 2.15's signatures and defaults);
here too are the base 2.15's exporters and libraries' subclasses build on,
`_SavedModelExporter` (it exports after every evaluation), and
BestExporter's default comparison and its check of a compare_fn.
"""

# pylint: disable=unused-import
from estimator_rt.exporters import _loss_smaller
from estimator_rt.exporters import _SavedModelExporter
from estimator_rt.exporters import _verify_compare_fn_args
from estimator_rt.exporters import BestExporter
from estimator_rt.exporters import Exporter
from estimator_rt.exporters import FinalExporter
from estimator_rt.exporters import LatestExporter
# pylint: enable=unused-import
