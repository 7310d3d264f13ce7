"""fairest: fairness-aware estimators that feel native to scikit-learn."""

from fairest._config import config_context, get_config, set_config
from fairest.utils._lazy import lazy_exports

# every other public name is imported on first access (PEP 562), so that ``import
# fairest`` stays cheap: a joblib worker unpickling one estimator loads only its family
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "certified": ["CertifiedFairClassifier", "certify_fairness"],
        "constrained": ["LossGapConstrainedClassifier", "PrunedFairClassifier"],
        "ermi": ["ERMIClassifier"],
        "monitoring": ["FairnessMonitor"],
        "partial": [
            "GroupAUCConstrainedClassifier",
            "GroupInteractionFeatures",
            "InterGroupPairwiseConstrainedClassifier",
            "IntraGroupPairwiseConstrainedClassifier",
            "PartialParityClassifier",
            "PartialParityPenaltyClassifier",
        ],
        "paths": ["fairness_path"],
        "postprocessing": [
            "GroupThresholdClassifier",
            "LevellingUpClassifier",
            "WassersteinParityRegressor",
        ],
        "reweighting": [
            "BADRClassifier",
            "BADRRegressor",
            "GroupWeightedClassifier",
            "GroupWeightedRegressor",
        ],
        "utils._show_versions": ["show_versions"],
    },
    submodules=[
        "certified",
        "constrained",
        "datasets",
        "ermi",
        "io",
        "metrics",
        "model_selection",
        "monitoring",
        "partial",
        "paths",
        "plot",
        "postprocessing",
        "reweighting",
        "selection",
        "utils",
    ],
)

__version__ = "0.1.0.dev0"  # the one source: pyproject.toml reads it (dynamic version)

__all__ = [*__all__, "__version__", "config_context", "get_config", "set_config"]
