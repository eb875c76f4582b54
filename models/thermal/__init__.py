"""Thermal-frame models: ViT teacher, small CNN student (input ``(1, 120, 160)``)."""
