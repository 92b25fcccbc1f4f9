/*
 * The table of outstanding FUSE requests. A JS request handle carries (generation << 32 | index); a slot is
 * reused only with a new generation, so a late or second reply can be told apart from a live one without
 * any finalizer on the handle. Slots orphaned by an unmount stay allocated until JS answers them (the
 * answer is then dropped) so that an async handler finishing after unmount is not an error; a WRITE's
 * payload buffer (wbuf.c) goes back to the pool when its slot is freed, not before.
 */
#include "hf.h"
#include <stdlib.h>
#include <errno.h>

static hf_slot *slots;
static uint32_t nslots, capslots;
static uint32_t *freelist;
static uint32_t nfree;

uint64_t hf_slot_new(fuse_req_t req, hf_session *s) {
  uint32_t idx;
  if (nfree > 0) {
    idx = freelist[--nfree];
  } else {
    if (nslots == capslots) {
      uint32_t cap = capslots ? capslots * 2 : 256;
      hf_slot *ns = realloc(slots, cap * sizeof(hf_slot));
      uint32_t *nf = realloc(freelist, cap * sizeof(uint32_t));
      if (!ns || !nf) abort();
      slots = ns; freelist = nf; capslots = cap;
    }
    idx = nslots++;
    slots[idx].gen = 0;
  }
  hf_slot *sl = &slots[idx];
  sl->gen++;
  if (sl->gen == 0) sl->gen = 1;
  sl->req = req;
  sl->s = s;
  sl->live = 1;
  sl->wbuf = -1;
  sl->obj = NULL;
  return ((uint64_t)sl->gen << 32) | idx;
}

hf_slot *hf_slot_get(uint64_t handle, int *stale) {
  uint32_t idx = (uint32_t)handle, gen = (uint32_t)(handle >> 32);
  *stale = 0;
  if (idx >= nslots || slots[idx].gen != gen || !slots[idx].live) {
    *stale = 1;
    return NULL;
  }
  return &slots[idx];
}

void hf_slot_free(napi_env env, hf_slot *sl) {
  if (sl->wbuf >= 0) hf_wbuf_release(sl->wbuf, 1);
  sl->wbuf = -1;
  if (sl->obj) napi_delete_reference(env, sl->obj);
  sl->obj = NULL;
  sl->live = 0;
  sl->req = NULL;
  sl->s = NULL;
  sl->gen++;
  freelist[nfree++] = (uint32_t)(sl - slots);
}

void hf_slots_orphan(napi_env env, hf_session *s, int errno_reply) {
  for (uint32_t i = 0; i < nslots; i++) {
    hf_slot *sl = &slots[i];
    if (!sl->live || sl->s != s || !sl->req) continue;
    fuse_reply_err(sl->req, errno_reply);
    sl->req = NULL;
    if (sl->obj) { napi_delete_reference(env, sl->obj); sl->obj = NULL; }
  }
}
