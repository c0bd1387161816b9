"""model_util.py - helpers shared by the model tests (test_models.py for the
FX bridge, test_dynamo_models.py for ptc.compile)."""
import torch
import torch.nn as nn


def randomize_bn(model, gen):
    """Random running stats and affine params for every BatchNorm (eval)."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
                m.weight.copy_(torch.rand(n, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(n, generator=gen) * 0.1)
    return model
