# The guest image (docs/IMAGE.md): `make image` -> $(B)/image/ with vmlinuz,
# vmlinux, initramfs.cpio.gz, rootfs.ext4, rootfs.erofs and manifest.json. The script keeps
# its own layers (build/image-cache) and rebuilds only what changed.

IMAGE_BINS := $(B)/cellvm-agent $(B)/cellvm-executor $(B)/cellvm-init.stripped

.PHONY: image image-data kernel
image: $(IMAGE_BINS)
	$(PYTHON) image-build/build_image.py --build $(B)

# Opt-in: the "data" profile, $(B)/image-data/ (the default image plus SciPy,
# seaborn, scikit-learn, statsmodels, ...: image-build/packages-data.txt).
# Same artefacts and manifest; its base layer is cached beside the default's.
image-data: $(IMAGE_BINS)
	$(PYTHON) image-build/build_image.py --build $(B) --profile data

# Optional: a minimal kernel with every needed driver built in (fastest boot).
kernel:
	image-build/build_kernel.sh $(B)/kernel

# demo-vm: another name for `make demo` (top Makefile): the sales-CSV chart
# example in a real micro-VM (QEMU; KVM when usable, else TCG), booted
# with Sandbox.create(); the CSV goes up with sandbox.files.write, the chart
# comes back as PNG.
.PHONY: demo-vm
demo-vm: demo
