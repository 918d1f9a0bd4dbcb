# SPDX-License-Identifier: MIT
# vgpuctl, the admin tool (tools/vgpuctl*.c, tools/nl.c), and its packaging
# files. Included by the top-level Makefile; also works alone from the top
# folder (make -f mk/tools.mk ...), as tests/kmod/run uses it. Every
# variable can be set before the include.
#
#   make vgpuctl          build/bin/vgpuctl (needs libnl-3-dev libnl-genl-3-dev)
#   make vgpuctl-static   build/bin/vgpuctl.static, for the QEMU guest
#   make install-tools    vgpuctl, the udev rule and the sysusers.d file
#   make test-tools       tests/unit/test_vgpuctl.sh (no module needed)

PREFIX ?= /usr/local
DESTDIR ?=
VGPU_BUILD ?= build
PKG_CONFIG ?= pkg-config
TOOLS_VERSION ?= $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
TOOLS_CFLAGS ?= -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -I include $(COMMON_INC) -O2 -g

VGPUCTL := $(VGPU_BUILD)/bin/vgpuctl
# vgpuctl restore opens a checkpoint's chain itself, with its caller's rights.
VGPUCTL_SRCS := tools/vgpuctl.c $(wildcard tools/vgpuctl_*.c) tools/nl.c \
	common/ckpt/ckpt_file.c common/ckpt/ckpt_crc.c common/ckpt/ckpt_zstd.c common/ckpt/ckpt_read.c \
	common/ckpt/ckpt_chain.c common/fdpass.c common/dial.c
VGPUCTL_DEPS := $(VGPUCTL_SRCS) tools/vgpuctl.h tools/nl.h include/uapi/vgpu.h \
	include/vgpu/proto.h include/vgpu/ctl.h common/ckpt/ckpt.h mk/tools.mk
LIBNL_CFLAGS = $(shell $(PKG_CONFIG) --cflags libnl-genl-3.0)
LIBNL_LIBS = $(shell $(PKG_CONFIG) --libs libnl-genl-3.0)
LIBNL_STATIC_LIBS = $(shell $(PKG_CONFIG) --static --libs libnl-genl-3.0)
NEED_LIBNL = @$(PKG_CONFIG) --exists libnl-genl-3.0 || { \
	echo "vgpuctl needs libnl-genl-3.0: apt-get install libnl-3-dev libnl-genl-3-dev" >&2; \
	exit 1; }
VGPUCTL_CC = $(CC) -pthread $(TOOLS_CFLAGS) -DVGPU_VERSION='"$(TOOLS_VERSION)"' $(LIBNL_CFLAGS)

.PHONY: vgpuctl vgpuctl-static install-tools test-tools

vgpuctl: $(VGPUCTL)
vgpuctl-static: $(VGPUCTL).static

$(VGPUCTL): $(VGPUCTL_DEPS)
	$(NEED_LIBNL)
	@mkdir -p $(@D)
	$(VGPUCTL_CC) -o $@ $(VGPUCTL_SRCS) $(LIBNL_LIBS) -ldl

# Nothing but the kernel needed at run time: the guest has no libraries.
$(VGPUCTL).static: $(VGPUCTL_DEPS)
	$(NEED_LIBNL)
	@mkdir -p $(@D)
	$(VGPUCTL_CC) -static -o $@ $(VGPUCTL_SRCS) $(LIBNL_STATIC_LIBS)

install-tools: $(VGPUCTL)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)/lib/udev/rules.d \
		$(DESTDIR)/usr/lib/sysusers.d
	install -m 755 $(VGPUCTL) $(DESTDIR)$(PREFIX)/bin/vgpuctl
	install -m 644 tools/99-vgpu.rules $(DESTDIR)/lib/udev/rules.d/99-vgpu.rules
	install -m 644 tools/vgpu-group.conf $(DESTDIR)/usr/lib/sysusers.d/vgpu.conf

test-tools: $(VGPUCTL)
	sh tests/unit/test_vgpuctl.sh $(VGPUCTL)
