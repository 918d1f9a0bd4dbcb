# SPDX-License-Identifier: GPL-2.0 OR MIT
# vgpu.ko targets; the top-level Makefile includes this fragment.
#
#   make module          build vgpu.ko for KDIR (default: the running kernel)
#   make module-install  install it into /lib/modules/<kernel>/updates
#   make dkms-install    register the source with dkms, build and install it
#   make test-kmod       the QEMU suite (tests/kmod/run)

KDIR ?= /lib/modules/$(shell uname -r)/build
VGPU_TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
DKMS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' $(VGPU_TOP)/dkms.conf)
DKMS_SRC ?= /usr/src/vgpu-$(DKMS_VERSION)
# What dkms needs to build the module, relative to VGPU_TOP.
DKMS_FILES := Kbuild dkms.conf include/uapi/vgpu.h $(wildcard $(VGPU_TOP)/kmod/*.[ch])

.PHONY: module module-install module-clean dkms-stage dkms-install test-kmod

module:
	$(MAKE) -C $(KDIR) M=$(VGPU_TOP) modules

module-install: module
	$(MAKE) -C $(KDIR) M=$(VGPU_TOP) modules_install

module-clean:
	$(MAKE) -C $(KDIR) M=$(VGPU_TOP) clean

# Copies the module source to DKMS_SRC (the dkms source tree).
dkms-stage:
	mkdir -p $(DKMS_SRC)
	cd $(VGPU_TOP) && cp --parents $(patsubst $(VGPU_TOP)/%,%,$(DKMS_FILES)) $(DKMS_SRC)/

dkms-install: dkms-stage
	dkms add -m vgpu -v $(DKMS_VERSION)
	dkms build -m vgpu -v $(DKMS_VERSION)
	dkms install -m vgpu -v $(DKMS_VERSION)

test-kmod:
	$(VGPU_TOP)/tests/kmod/run
