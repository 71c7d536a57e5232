"""llmsweep: first-principles LLM inference estimates for GPU buying and capacity planning."""

__version__ = "0.1.0"
