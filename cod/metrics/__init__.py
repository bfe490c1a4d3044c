"""Layer-effectiveness measurements for our models and for Hugging Face models."""
