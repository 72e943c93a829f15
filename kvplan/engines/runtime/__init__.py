"""Engine-neutral runtime physics the engines' memory models share, so that no engine imports another: the weights
a GPU holds (weights), activation peaks (activations), what CUDA and the distributed init hold before loading
(startup), the option value parsers (options) and what every log reader shares (logs)."""
