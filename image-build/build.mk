# The guest image (docs/IMAGE.md): `make image` -> $(B)/image/ with vmlinuz,
# vmlinux, initramfs.cpio.gz, rootfs.ext4 and manifest.json. The script keeps
# its own layers (build/image-cache) and rebuilds only what changed.

IMAGE_BINS := $(B)/cellvm-agent $(B)/cellvm-executor $(B)/cellvm-init.stripped

.PHONY: image kernel
image: $(IMAGE_BINS)
	$(PYTHON) image-build/build_image.py --build $(B)

# Optional: a minimal kernel with every needed driver built in (fastest boot).
kernel:
	image-build/build_kernel.sh $(B)/kernel

# The sales-CSV chart example in a real micro-VM (QEMU; KVM when usable, else
# TCG): installs what it needs, builds the binaries and the image, boots it
# with Sandbox.create(), uploads the CSV with sandbox.files.write, runs pandas
# + matplotlib in the guest and writes the chart on the host.
.PHONY: demo-vm
demo-vm: deps
	$(MAKE) all
	$(MAKE) image
	$(PYTHON) client/python/examples/sales_chart.py --vm --image $(B)/image --out $(B)/demo/sales_chart_vm.png
