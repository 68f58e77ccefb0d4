// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory shared with a user process (the rings of the userspace fast path,
 * include/uapi/rdma/metaroce-abi.h): zeroed vmalloc buffers, charged to the
 * process that creates them (its memory cgroup), that the process maps
 * through ib_core's mmap entries, at an offset the create response tells
 * it. A mapping can never be made executable.
 *
 * A buffer belongs to its mmap entry and is freed when the entry's last
 * reference goes (mr_mmap_free()): after its object removed the entry and
 * no mmap() call holds it. Pages already mapped into the process keep
 * their own references (mr_mmap() takes them), so a process
 * that unmaps late reads stale memory, never freed memory. The kernel
 * writes such a buffer only while the object that owns it exists, and
 * reads from it only values it then checks.
 */

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_verbs.h>

#include "objects.h"

struct mr_umap {
	struct rdma_user_mmap_entry rdma;
	void *buf;
};

/**
 * mr_umap_alloc() - allocate a zeroed buffer a process can map
 * @uctx: the process's context
 * @size: bytes (rounded up to whole pages)
 * @umap: set to the handle for mr_umap_remove()
 * @offset: set to the mmap() offset of the buffer
 *
 * Process context.
 *
 * Return: the buffer's kernel address, or an ERR_PTR (-ENOMEM, or what
 * ib_core says when the context has no room for another entry).
 */
void *mr_umap_alloc(struct ib_ucontext *uctx, size_t size,
		    struct mr_umap **umap, u64 *offset)
{
	struct mr_umap *m;
	int err;

	size = PAGE_ALIGN(size);
	m = kzalloc(sizeof(*m), GFP_KERNEL_ACCOUNT);
	if (!m)
		return ERR_PTR(-ENOMEM);
	/*
	 * Not vmalloc_user(), which cannot charge the process: mr_mmap()
	 * maps the pages one by one, as remap_vmalloc_range() would.
	 */
	m->buf = __vmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!m->buf) {
		kfree(m);
		return ERR_PTR(-ENOMEM);
	}
	err = rdma_user_mmap_entry_insert(uctx, &m->rdma, size);
	if (err) {
		vfree(m->buf);
		kfree(m);
		return ERR_PTR(err);
	}
	*umap = m;
	*offset = rdma_user_mmap_get_offset(&m->rdma);
	return m->buf;
}

/*
 * mr_umap_remove() - no new mappings of the buffer; it is freed when the
 * last reference goes. NULL is ignored.
 */
void mr_umap_remove(struct mr_umap *umap)
{
	if (umap)
		rdma_user_mmap_entry_remove(&umap->rdma);
}

/*
 * ib_device_ops.mmap: map one whole buffer, read/write, never executable
 * (not even by a later mprotect()), neither grown by mremap() nor dumped.
 * A ring belongs to the process that created it: a child of fork() does
 * not inherit the mapping (as with a device's doorbell pages), so it can
 * neither post to its parent's queues nor see their completions.
 */
int mr_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *entry;
	unsigned long off;
	void *buf;
	int err = 0;

	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	/* Checks that the length is the entry's, from offset 0. */
	entry = rdma_user_mmap_entry_get(uctx, vma);
	if (!entry)
		return -EINVAL;
	buf = container_of(entry, struct mr_umap, rdma)->buf;
	vm_flags_mod(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP,
		     VM_MAYEXEC);
	/* Each page gets a reference of the mapping's own. */
	for (off = 0; off < vma->vm_end - vma->vm_start && !err;
	     off += PAGE_SIZE)
		err = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page(buf + off));
	rdma_user_mmap_entry_put(entry);
	return err;
}

/* ib_device_ops.mmap_free: the entry's last reference is gone. */
void mr_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct mr_umap *m = container_of(entry, struct mr_umap, rdma);

	vfree(m->buf);
	kfree(m);
}
