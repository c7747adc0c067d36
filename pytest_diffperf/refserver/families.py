"""Stage math of each model family, written after the matching diffusers pipelines.

A family exposes one method per SGLang stage; the staged runner (pipeline.py) times them. State
flows through a ``StageState`` dict ``ctx``. ``decode`` returns float images in [0, 1] shaped
(n, H, W, 3) for images or (n, F, H, W, 3) for videos.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import numpy as np
import numpy.typing as npt
import torch
from PIL import Image

from .specs import GenParams

if TYPE_CHECKING:
    from transformers import BatchEncoding, PreTrainedTokenizerBase

    from .modules import Components


class Scheduler(Protocol):
    """What the stages use of a diffusers scheduler (``FlowMatchEulerDiscreteScheduler``, ``EulerDiscreteScheduler``)."""

    config: Any  # diffusers' FrozenDict of the constructor's arguments, read as attributes
    timesteps: torch.Tensor
    init_noise_sigma: float | torch.Tensor

    def set_timesteps(self, num_inference_steps: int | None = None, **kwargs: Any) -> None: ...

    def scale_model_input(self, sample: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor: ...

    def step(
        self, model_output: torch.Tensor, timestep: torch.Tensor, sample: torch.Tensor, *, return_dict: bool
    ) -> tuple[torch.Tensor, ...]: ...


class StageState(TypedDict, total=False):
    """What a stage leaves for the later ones; each family sets the keys its stages use."""

    embeds: torch.Tensor  # prompt embeddings, one row per output (SD with CFG: negative rows first)
    neg_embeds: torch.Tensor  # Wan's negative-prompt embeddings (with CFG)
    pooled: torch.Tensor  # Flux's pooled CLIP embedding
    txt_ids: torch.Tensor  # Flux's text position ids
    img_ids: torch.Tensor  # Flux's latent (and Kontext input-image) position ids
    guidance: torch.Tensor  # Flux's guidance embedding input
    latents: torch.Tensor
    image_latents: torch.Tensor  # Flux Kontext's packed input-image latents
    condition: torch.Tensor  # Wan I2V's mask and first-frame latents
    scheduler: Scheduler  # this request's own scheduler


def noise(shape: tuple[int, ...], generators: list[torch.Generator]) -> torch.Tensor:
    """Gaussian noise for ``len(generators)`` outputs, output i drawn from generator i."""
    return torch.cat([torch.randn((1, *shape), generator=g) for g in generators])


def _one_or_list(generators: list[torch.Generator]) -> torch.Generator | list[torch.Generator]:
    """What diffusers' ``prepare_latents`` takes: one generator, or one per output."""
    return generators[0] if len(generators) == 1 else generators


def _tokens(tokenizer: PreTrainedTokenizerBase, texts: list[str], length: int) -> BatchEncoding:
    return tokenizer(
        texts,
        padding="max_length",
        max_length=length,
        truncation=True,
        return_tensors="pt",
    )


def _input_image(p: GenParams) -> npt.NDArray[np.uint8]:
    """The request's input picture (image-edit and image-to-video models are only called with one)."""
    assert p.image is not None, "this model needs an input image"
    return p.image


class Family:
    """One method per SGLang stage; a subclass implements them after its diffusers pipeline."""

    def __init__(self, components: Components):
        self.c = components

    def encode_text(self, p: GenParams, ctx: StageState) -> None:
        raise NotImplementedError

    def prepare_latents(self, p: GenParams, ctx: StageState, gens: list[torch.Generator]) -> None:
        raise NotImplementedError

    def prepare_timesteps(self, p: GenParams, ctx: StageState) -> torch.Tensor:
        raise NotImplementedError

    def denoise_step(self, p: GenParams, ctx: StageState, t: torch.Tensor) -> None:
        raise NotImplementedError

    def decode(self, p: GenParams, ctx: StageState) -> torch.Tensor:
        raise NotImplementedError

    def scheduler(self) -> Scheduler:
        """A fresh scheduler per request: diffusers schedulers keep per-run state."""
        base = self.c["scheduler"]
        fresh: Scheduler = type(base).from_config(base.config)
        return fresh

    def cfg(self, p: GenParams) -> bool:
        return p.guidance_scale > 1.0


class FluxFamily(Family):
    """FluxPipeline: CLIP pooled + T5 sequence embeddings, packed latents, guidance embedding."""

    def encode_text(self, p: GenParams, ctx: StageState) -> None:
        clip_ids = _tokens(self.c["tokenizer"], [p.prompt], 77).input_ids
        t5_ids = _tokens(self.c["tokenizer_2"], [p.prompt], 64).input_ids
        pooled = self.c["text_encoder"](clip_ids).pooler_output
        seq = self.c["text_encoder_2"](t5_ids).last_hidden_state
        ctx["pooled"] = pooled.repeat(p.n, 1)
        ctx["embeds"] = seq.repeat(p.n, 1, 1)
        ctx["txt_ids"] = torch.zeros(seq.shape[1], 3)

    def prepare_latents(self, p: GenParams, ctx: StageState, gens: list[torch.Generator]) -> None:
        from diffusers import FluxPipeline

        h, w = 2 * (p.height // 16), 2 * (p.width // 16)
        ctx["latents"] = FluxPipeline._pack_latents(noise((16, h, w), gens), p.n, 16, h, w)
        ctx["img_ids"] = FluxPipeline._prepare_latent_image_ids(p.n, h // 2, w // 2, "cpu", torch.float32)

    def prepare_timesteps(self, p: GenParams, ctx: StageState) -> torch.Tensor:
        from diffusers.pipelines.flux.pipeline_flux import calculate_shift

        sched = ctx["scheduler"] = self.scheduler()
        cfg = sched.config
        mu = calculate_shift(
            ctx["latents"].shape[1],
            cfg.base_image_seq_len,
            cfg.max_image_seq_len,
            cfg.base_shift,
            cfg.max_shift,
        )
        sched.set_timesteps(sigmas=np.linspace(1.0, 1 / p.steps, p.steps).tolist(), mu=mu)
        ctx["guidance"] = torch.full((p.n,), p.guidance_scale)
        return sched.timesteps

    def denoise_step(self, p: GenParams, ctx: StageState, t: torch.Tensor) -> None:
        latents = ctx["latents"]
        image_latents = ctx.get("image_latents")
        hidden = latents if image_latents is None else torch.cat([latents, image_latents], dim=1)
        pred = self.c["transformer"](
            hidden_states=hidden,
            timestep=t.expand(latents.shape[0]) / 1000,
            guidance=ctx["guidance"],
            pooled_projections=ctx["pooled"],
            encoder_hidden_states=ctx["embeds"],
            txt_ids=ctx["txt_ids"],
            img_ids=ctx["img_ids"],
            return_dict=False,
        )[0][:, : latents.shape[1]]
        ctx["latents"] = ctx["scheduler"].step(pred, t, latents, return_dict=False)[0]

    def decode(self, p: GenParams, ctx: StageState) -> torch.Tensor:
        from diffusers import FluxPipeline

        vae = self.c["vae"]
        latents = FluxPipeline._unpack_latents(ctx["latents"], p.height, p.width, 8)
        latents = latents / vae.config.scaling_factor + vae.config.shift_factor
        image: torch.Tensor = vae.decode(latents, return_dict=False)[0]
        return (image / 2 + 0.5).clamp(0, 1).permute(0, 2, 3, 1)


class SDFamily(Family):
    """StableDiffusionPipeline: CLIP embeddings, classifier-free guidance, UNet, Euler."""

    def encode_text(self, p: GenParams, ctx: StageState) -> None:
        texts = [p.negative_prompt, p.prompt] if self.cfg(p) else [p.prompt]
        embeds = self.c["text_encoder"](_tokens(self.c["tokenizer"], texts, 77).input_ids).last_hidden_state
        ctx["embeds"] = embeds.repeat_interleave(p.n, dim=0)

    def prepare_latents(self, p: GenParams, ctx: StageState, gens: list[torch.Generator]) -> None:
        ctx["latents"] = noise((4, p.height // 8, p.width // 8), gens)

    def prepare_timesteps(self, p: GenParams, ctx: StageState) -> torch.Tensor:
        sched = ctx["scheduler"] = self.scheduler()
        sched.set_timesteps(p.steps)
        ctx["latents"] = ctx["latents"] * sched.init_noise_sigma
        return sched.timesteps

    def denoise_step(self, p: GenParams, ctx: StageState, t: torch.Tensor) -> None:
        sched, latents = ctx["scheduler"], ctx["latents"]
        model_in = torch.cat([latents] * 2) if self.cfg(p) else latents
        model_in = sched.scale_model_input(model_in, t)
        pred = self.c["unet"](model_in, t, encoder_hidden_states=ctx["embeds"], return_dict=False)[0]
        if self.cfg(p):
            uncond, cond = pred.chunk(2)
            pred = uncond + p.guidance_scale * (cond - uncond)
        ctx["latents"] = sched.step(pred, t, latents, return_dict=False)[0]

    def decode(self, p: GenParams, ctx: StageState) -> torch.Tensor:
        vae = self.c["vae"]
        image: torch.Tensor = vae.decode(ctx["latents"] / vae.config.scaling_factor, return_dict=False)[0]
        return (image / 2 + 0.5).clamp(0, 1).permute(0, 2, 3, 1)


class WanFamily(Family):
    """WanPipeline: UMT5 embeddings (trimmed, zero-padded), 3D transformer, causal video VAE."""

    def _embed(self, text: str, n: int) -> torch.Tensor:
        tokens = _tokens(self.c["tokenizer"], [text], 64)
        hidden: torch.Tensor = self.c["text_encoder"](tokens.input_ids, tokens.attention_mask).last_hidden_state
        keep = int(tokens.attention_mask.sum())
        hidden[:, keep:] = 0
        return hidden.repeat(n, 1, 1)

    def encode_text(self, p: GenParams, ctx: StageState) -> None:
        ctx["embeds"] = self._embed(p.prompt, p.n)
        if self.cfg(p):
            ctx["neg_embeds"] = self._embed(p.negative_prompt, p.n)

    def prepare_latents(self, p: GenParams, ctx: StageState, gens: list[torch.Generator]) -> None:
        frames = (p.num_frames - 1) // 4 + 1
        ctx["latents"] = noise((16, frames, p.height // 8, p.width // 8), gens)

    def model_input(self, ctx: StageState) -> torch.Tensor:
        return ctx["latents"]

    def prepare_timesteps(self, p: GenParams, ctx: StageState) -> torch.Tensor:
        sched = ctx["scheduler"] = self.scheduler()
        sched.set_timesteps(p.steps)
        return sched.timesteps

    def denoise_step(self, p: GenParams, ctx: StageState, t: torch.Tensor) -> None:
        latents, model = ctx["latents"], self.c["transformer"]
        hidden = self.model_input(ctx)
        timestep = t.expand(latents.shape[0])
        pred = model(
            hidden_states=hidden,
            timestep=timestep,
            encoder_hidden_states=ctx["embeds"],
            return_dict=False,
        )[0]
        if self.cfg(p):
            uncond = model(
                hidden_states=hidden,
                timestep=timestep,
                encoder_hidden_states=ctx["neg_embeds"],
                return_dict=False,
            )[0]
            pred = uncond + p.guidance_scale * (pred - uncond)
        ctx["latents"] = ctx["scheduler"].step(pred, t, latents, return_dict=False)[0]

    def decode(self, p: GenParams, ctx: StageState) -> torch.Tensor:
        vae = self.c["vae"]
        shape = (1, vae.config.z_dim, 1, 1, 1)
        mean = torch.tensor(vae.config.latents_mean).view(shape)
        std = torch.tensor(vae.config.latents_std).view(shape)
        video: torch.Tensor = vae.decode(ctx["latents"] * std + mean, return_dict=False)[0]
        return (video / 2 + 0.5).clamp(0, 1).permute(0, 2, 3, 4, 1)


class FluxKontextFamily(FluxFamily):
    """FluxKontextPipeline: the input image's packed VAE latents join the sequence (ids offset to 1)."""

    def __init__(self, components: Components):
        from diffusers import FluxKontextPipeline

        super().__init__(components)
        c = components
        self.pipe = FluxKontextPipeline(
            scheduler=c["scheduler"],
            vae=c["vae"],
            text_encoder=c["text_encoder"],
            tokenizer=c["tokenizer"],
            text_encoder_2=c["text_encoder_2"],
            tokenizer_2=c["tokenizer_2"],
            transformer=c["transformer"],
        )

    def prepare_latents(self, p: GenParams, ctx: StageState, gens: list[torch.Generator]) -> None:
        image = self.pipe.image_processor.preprocess(Image.fromarray(_input_image(p)), height=p.height, width=p.width)
        latents, image_latents, latent_ids, image_ids = self.pipe.prepare_latents(
            image, p.n, 16, p.height, p.width, torch.float32, torch.device("cpu"), _one_or_list(gens)
        )
        ctx["latents"], ctx["image_latents"] = latents, image_latents
        ctx["img_ids"] = torch.cat([latent_ids, image_ids], dim=0)


class WanI2VFamily(WanFamily):
    """WanImageToVideoPipeline (Wan 2.2 style, no CLIP image encoder): first-frame latents and mask as condition."""

    def __init__(self, components: Components):
        from diffusers import WanImageToVideoPipeline

        super().__init__(components)
        c = components
        self.pipe = WanImageToVideoPipeline(
            tokenizer=c["tokenizer"],
            text_encoder=c["text_encoder"],
            vae=c["vae"],
            scheduler=c["scheduler"],
            transformer=c["transformer"],
        )

    def prepare_latents(self, p: GenParams, ctx: StageState, gens: list[torch.Generator]) -> None:
        image = self.pipe.video_processor.preprocess(Image.fromarray(_input_image(p)), height=p.height, width=p.width)
        ctx["latents"], ctx["condition"] = self.pipe.prepare_latents(
            image, p.n, 16, p.height, p.width, p.num_frames, torch.float32, torch.device("cpu"), _one_or_list(gens)
        )

    def model_input(self, ctx: StageState) -> torch.Tensor:
        return torch.cat([ctx["latents"], ctx["condition"]], dim=1)


FAMILIES: dict[str, type[Family]] = {
    "flux": FluxFamily,
    "sd": SDFamily,
    "wan": WanFamily,
    "flux-kontext": FluxKontextFamily,
    "wan-i2v": WanI2VFamily,
}
