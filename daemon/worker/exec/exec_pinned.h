/* SPDX-License-Identifier: MIT */
/* Pinned copies from client memory mapped through /dev/vgpu (exec_pinned.c);
 * the handlers are in exec_bulk_ops. */
#ifndef VGPU_EXEC_PINNED_H
#define VGPU_EXEC_PINNED_H

#include "worker.h"

enum op_status exec_pinned_htod(struct worker *w, struct op_call *call);
enum op_status exec_pinned_dtoh(struct worker *w, struct op_call *call);
enum op_status exec_pin_forget(struct worker *w, struct op_call *call);

#endif
