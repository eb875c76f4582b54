"""PLC models over one window's feature vector: feature-token transformer teacher, MLP student."""
