"""Published (or your own) measurements <-> estimates: compare, fit the efficiency profile, and
say how accurate the estimator is, out of sample.

    measurement.py  the Measurement record, the metrics llmsweep can compare, source keys
    readers.py      files -> measurements (measured-dev.csv schema, vLLM JSON, llama-bench)
    comparison.py   measurements -> one frame -> estimates -> the comparison frame, summaries
    fitting.py      Nelder-Mead, loss and prior, fitting, leave-one-source-out cross-validation
    bands.py        uncertainty bands from the out-of-sample errors
    run.py          the `calibrate` command: read, compare, fit, write
"""

from __future__ import annotations

from llmsweep.calibrate.bands import bands
from llmsweep.calibrate.comparison import PARAMS, Evaluator, compare, comparison_frame, summary
from llmsweep.calibrate.fitting import FitResult, calibrate, cross_validate, fit
from llmsweep.calibrate.measurement import GROUPS, METRICS, Measurement, ReadResult, source_key
from llmsweep.calibrate.readers import read_file, read_measurements
from llmsweep.calibrate.run import CalibrationReport, profile_document, run_calibration
from llmsweep.errors import LlmsweepError

__all__ = [
    "GROUPS",
    "METRICS",
    "PARAMS",
    "CalibrationReport",
    "Evaluator",
    "FitResult",
    "LlmsweepError",
    "Measurement",
    "ReadResult",
    "bands",
    "calibrate",
    "compare",
    "comparison_frame",
    "cross_validate",
    "fit",
    "profile_document",
    "read_file",
    "read_measurements",
    "run_calibration",
    "source_key",
    "summary",
]
