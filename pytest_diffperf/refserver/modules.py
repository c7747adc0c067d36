"""Torch modules of the built-in tiny models: real diffusers/transformers modules with seeded random weights.

Nothing is downloaded: configs are written here, weights come from ``torch.manual_seed`` before
each module is built, tokenizers are byte-level BPEs built in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypedDict, TypeVar

import torch
from tokenizers import Tokenizer, decoders, pre_tokenizers, processors
from tokenizers.models import BPE
from transformers import (
    CLIPTextConfig,
    CLIPTextModel,
    CLIPTokenizer,
    PreTrainedTokenizerFast,
    T5Config,
    T5EncoderModel,
    UMT5Config,
    UMT5EncoderModel,
)

if TYPE_CHECKING:
    from diffusers import (
        AutoencoderKL,
        AutoencoderKLWan,
        EulerDiscreteScheduler,
        FlowMatchEulerDiscreteScheduler,
        FluxTransformer2DModel,
        UNet2DConditionModel,
        WanTransformer3DModel,
    )

WEIGHT_SEED = 20240611
M = TypeVar("M", bound=torch.nn.Module)


class Components(TypedDict, total=False):
    """A family's modules by their diffusers pipeline argument names (the keys its builder sets).

    diffusers and transformers are not type-checked here (``follow_imports = "skip"``), so to mypy
    these classes are ``Any``: the names say what each entry is.
    """

    tokenizer: CLIPTokenizer | PreTrainedTokenizerFast
    text_encoder: CLIPTextModel | UMT5EncoderModel
    tokenizer_2: PreTrainedTokenizerFast  # Flux's T5 tokenizer
    text_encoder_2: T5EncoderModel
    transformer: FluxTransformer2DModel | WanTransformer3DModel
    unet: UNet2DConditionModel
    vae: AutoencoderKL | AutoencoderKLWan
    scheduler: FlowMatchEulerDiscreteScheduler | EulerDiscreteScheduler


def _seeded(offset: int, make: Callable[[], M]) -> M:
    torch.manual_seed(WEIGHT_SEED + offset)
    return make().eval().requires_grad_(False)


def clip_tokenizer() -> CLIPTokenizer:
    """CLIP tokenizer over a byte-level vocabulary without merges (one token per byte)."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for ch in alphabet:
        vocab[ch] = len(vocab)
    for ch in alphabet:
        vocab[ch + "</w>"] = len(vocab)
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=77)


def t5_tokenizer(max_length: int) -> PreTrainedTokenizerFast:
    """T5-style tokenizer (pad=0, eos=1, unk=2, ``</s>`` appended) over a byte-level vocabulary."""
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[ch] = len(vocab)
    tok = Tokenizer(BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        model_max_length=max_length,
    )


def _clip_text_encoder(hidden: int) -> CLIPTextModel:
    config = CLIPTextConfig(
        vocab_size=2 + 2 * 256,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=77,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=1,
        projection_dim=hidden,
    )
    return CLIPTextModel(config)


def _t5_config(cls: type[T5Config] | type[UMT5Config], hidden: int) -> T5Config | UMT5Config:
    return cls(
        vocab_size=3 + 256,
        d_model=hidden,
        d_kv=16,
        d_ff=2 * hidden,
        num_layers=2,
        num_heads=4,
        dropout_rate=0.0,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )


def _image_vae(latent_channels: int, scaling: float, shift: float | None) -> AutoencoderKL:
    from diffusers import AutoencoderKL

    return AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * 4,
        up_block_types=("UpDecoderBlock2D",) * 4,
        block_out_channels=(16, 32, 32, 32),
        layers_per_block=1,
        latent_channels=latent_channels,
        norm_num_groups=8,
        sample_size=256,
        scaling_factor=scaling,
        shift_factor=shift,
        use_quant_conv=shift is None,
        use_post_quant_conv=shift is None,
    )


def build_flux() -> Components:
    from diffusers import FlowMatchEulerDiscreteScheduler, FluxTransformer2DModel

    return {
        "tokenizer": clip_tokenizer(),
        "text_encoder": _seeded(1, lambda: _clip_text_encoder(64)),
        "tokenizer_2": t5_tokenizer(64),
        "text_encoder_2": _seeded(2, lambda: T5EncoderModel(_t5_config(T5Config, 64))),
        "transformer": _seeded(
            3,
            lambda: FluxTransformer2DModel(
                patch_size=1,
                in_channels=64,
                num_layers=1,
                num_single_layers=4,
                attention_head_dim=32,
                num_attention_heads=4,
                joint_attention_dim=64,
                pooled_projection_dim=64,
                guidance_embeds=True,
                axes_dims_rope=(8, 12, 12),
            ),
        ),
        "vae": _seeded(4, lambda: _image_vae(16, 0.3611, 0.1159)),
        "scheduler": FlowMatchEulerDiscreteScheduler(
            shift=3.0,
            use_dynamic_shifting=True,
            base_shift=0.5,
            max_shift=1.15,
            base_image_seq_len=256,
            max_image_seq_len=4096,
        ),
    }


def build_sd() -> Components:
    from diffusers import EulerDiscreteScheduler, UNet2DConditionModel

    return {
        "tokenizer": clip_tokenizer(),
        "text_encoder": _seeded(11, lambda: _clip_text_encoder(64)),
        "unet": _seeded(
            12,
            lambda: UNet2DConditionModel(
                sample_size=32,
                in_channels=4,
                out_channels=4,
                block_out_channels=(32, 64),
                layers_per_block=1,
                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
                cross_attention_dim=64,
                attention_head_dim=8,
                norm_num_groups=16,
            ),
        ),
        "vae": _seeded(13, lambda: _image_vae(4, 0.18215, None)),
        "scheduler": EulerDiscreteScheduler(
            beta_start=0.00085,
            beta_end=0.012,
            beta_schedule="scaled_linear",
            timestep_spacing="leading",
            steps_offset=1,
        ),
    }


def build_wan(in_channels: int = 16, seed_offset: int = 20) -> Components:
    from diffusers import (
        AutoencoderKLWan,
        FlowMatchEulerDiscreteScheduler,
        WanTransformer3DModel,
    )

    return {
        "tokenizer": t5_tokenizer(64),
        "text_encoder": _seeded(seed_offset + 1, lambda: UMT5EncoderModel(_t5_config(UMT5Config, 64))),
        "transformer": _seeded(
            seed_offset + 2,
            lambda: WanTransformer3DModel(
                patch_size=(1, 2, 2),
                num_attention_heads=4,
                attention_head_dim=32,
                in_channels=in_channels,
                out_channels=16,
                text_dim=64,
                freq_dim=64,
                ffn_dim=256,
                num_layers=3,
                rope_max_seq_len=256,
            ),
        ),
        "vae": _seeded(
            seed_offset + 3,
            lambda: AutoencoderKLWan(
                base_dim=16,
                z_dim=16,
                dim_mult=[1, 1, 1, 1],
                num_res_blocks=1,
                temperal_downsample=[False, True, True],
            ),
        ),
        "scheduler": FlowMatchEulerDiscreteScheduler(shift=3.0),
    }


MODULE_BUILDERS: dict[str, Callable[[], Components]] = {
    "flux": build_flux,
    "sd": build_sd,
    "wan": build_wan,
    "flux-kontext": build_flux,  # the same tiny Flux modules; Kontext conditions on image latents
    "wan-i2v": lambda: build_wan(in_channels=36, seed_offset=30),  # 16 noise + 4 mask + 16 image channels
}


def build_modules(family: str) -> Components:
    """The seeded torch modules, tokenizers and scheduler of one model family."""
    return MODULE_BUILDERS[family]()
