"""The shooting baselines (single and multiple shooting with adjoint or forward gradients) and
their optimizers, on the same problem definition as collocation."""
