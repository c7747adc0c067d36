"""Output consistency against ground truth: CLIP similarity, SSIM, PSNR and mean absolute difference
per compared frame, against SGLang-named GT files with a hash manifest and a CLIP embedding cache.

The plugin calls ``config.config_from_env`` once, ``config.validate_config`` at session start,
``config.check_clip_model`` once every other input is read, ``check.check_output`` per scenario and
``artifacts.write_summary`` at session end. Nothing is re-exported here: importing one module loads
only what it needs (numpy, PIL and torch load with the check, not with the plugin).
"""
