"""Audio models: Audio Spectrogram Transformer teacher, small CNN student (input ``(1, 64, T)``)."""
