# The pod image (docs/KUBERNETES.md): `make oci` -> $(B)/oci/, an OCI image
# layout (tag `cellvm`) of QEMU, the cellvm binary and the guest image, whose
# entrypoint is `cellvm serve --single`. Needs root, mmdebstrap, buildah and
# skopeo; the base layer is cached in $(B)/image-cache.
.PHONY: oci
oci: $(B)/cellvm image
	$(PYTHON) oci/build_oci.py --build $(B)
