// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory regions: the key table, user MRs (pinned with ib_umem), DMA MRs
 * (kernel virtual addresses: the device runs in ib_core's virtual DMA mode,
 * where a DMA address is the kernel virtual address), fast-registration MRs,
 * and the bounds-checked copies the data path makes to and from them.
 *
 * Keys: lkey == rkey == index << 8 | key byte. The index comes from
 * dev->mrs (1..METAROCE_MAX_MR, allocated cyclically, so key 0 never names
 * an MR and a freed index is not reused soon); the key byte is random at
 * registration and set by the ULP for each IB_WR_REG_MR.
 *
 * Lifetime: an MR in the table holds one reference (the table's); every
 * lookup that succeeds (mr_mem_get()) holds another until mr_mem_put().
 * Lookups run under RCU and only take a reference if the count is not
 * already zero. mr_dereg_mr() removes the MR from the table (no new lookup
 * can find it), drops the table's reference, then waits for the count to
 * reach zero: from then on nobody holds the MR, and nobody can take it
 * again (refcount_inc_not_zero() fails), so its pages are released, and
 * it can never be written again. A lookup that found the pointer just
 * before the removal may still be about to try refcount_inc_not_zero(),
 * so the structure itself is freed after an RCU grace period.
 */

#include <linux/highmem.h>
#include <linux/log2.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>

#include "metaroce.h"
#include "objects.h"

#define MR_ACCESS_REMOTE (IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE | \
			  IB_ACCESS_REMOTE_ATOMIC)
/*
 * What an MR may be given. Memory windows do not exist on this device, so
 * MW_BIND grants nothing; ZERO_BASED needs nothing (user MRs take any
 * iova); HUGETLB is a hint; the optional range may be ignored by definition.
 */
#define MR_ACCESS_ALLOWED (IB_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE | \
			   IB_ACCESS_MW_BIND | IB_ZERO_BASED | \
			   IB_ACCESS_HUGETLB | IB_ACCESS_OPTIONAL)

/*
 * ib_core checks the flags of uverbs registrations already; kernel callers
 * and IB_WR_REG_MR are checked here by the same rules.
 */
static int mr_check_access(int access)
{
	if (access & IB_ACCESS_ON_DEMAND)
		return -EOPNOTSUPP;
	if (access & ~MR_ACCESS_ALLOWED)
		return -EINVAL;
	/* Remote write and atomics need local write. */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

void mr_mem_table_init(struct mr_dev *dev)
{
	xa_init_flags(&dev->mrs, XA_FLAGS_ALLOC1);
	spin_lock_init(&dev->atomic_lock);
}

void mr_mem_table_destroy(struct mr_dev *dev)
{
	/* ib_core deregisters every MR before the device is freed. */
	WARN_ON(!xa_empty(&dev->mrs));
	xa_destroy(&dev->mrs);
}

static struct mr_mem *mr_mem_alloc(struct ib_pd *pd, enum mr_mem_type type)
{
	struct mr_mem *mem;

	/* Charged to the registering process (kernel callers: to nobody). */
	mem = kzalloc(sizeof(*mem), GFP_KERNEL_ACCOUNT);
	if (!mem)
		return NULL;
	mem->dev = to_mr_dev(pd->device);
	mem->type = type;
	/* ib_core sets it too, but only once the MR is in the table. */
	mem->ibmr.pd = pd;
	refcount_set(&mem->ref, 1);
	init_completion(&mem->released);
	spin_lock_init(&mem->lock);
	mem->page_shift = PAGE_SHIFT;
	return mem;
}

/* Frees what mr_mem_alloc() and the registration set up. */
static void mr_mem_free(struct mr_mem *mem)
{
	if (mem->umem)
		ib_umem_release(mem->umem);
	kvfree(mem->pages);
	kfree(mem->addrs);
	kfree_rcu(mem, rcu);
}

/*
 * Gives @mem (fully set up) its key and enters it in the table, which makes
 * it visible to lookups. The index is reserved first and the MR stored only
 * once its key is set, so no lookup sees a half-made MR.
 */
static int mr_mem_add(struct mr_mem *mem)
{
	struct mr_dev *dev = mem->dev;
	void *old;
	u32 index;
	int err;

	err = xa_alloc_cyclic(&dev->mrs, &index, NULL,
			      XA_LIMIT(1, METAROCE_MAX_MR), &dev->mr_next,
			      GFP_KERNEL);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;

	mem->index = index;
	mem->key = index << 8 | get_random_u8();
	mem->ibmr.lkey = mem->key;
	mem->ibmr.rkey = mem->key;

	old = xa_store(&dev->mrs, index, mem, GFP_KERNEL);
	if (xa_is_err(old)) {
		xa_erase(&dev->mrs, index);
		return xa_err(old);
	}
	return 0;
}

static bool mr_mem_range_ok(const struct mr_mem *mem, u64 iova, u64 len)
{
	u64 start = READ_ONCE(mem->iova);
	u64 size = READ_ONCE(mem->length);

	return iova >= start && len <= size && iova - start <= size - len;
}

struct mr_mem *mr_mem_get(struct mr_dev *dev, struct ib_pd *pd, u32 key,
			  int access, u64 iova, u64 len)
{
	struct mr_mem *mem;

	rcu_read_lock();
	mem = xa_load(&dev->mrs, key >> 8);
	if (mem && !refcount_inc_not_zero(&mem->ref))
		mem = NULL;
	rcu_read_unlock();
	if (!mem)
		return NULL;

	/*
	 * valid is set last (release) by REG_MR: read the rest after it. A
	 * DMA MR reaches all kernel memory: only ever with its own PD.
	 */
	if (!smp_load_acquire(&mem->valid) || READ_ONCE(mem->key) != key ||
	    (pd ? READ_ONCE(mem->ibmr.pd) != pd : mem->type == MR_MEM_DMA) ||
	    (READ_ONCE(mem->access) & access) != access ||
	    !mr_mem_range_ok(mem, iova, len)) {
		mr_mem_put(mem);
		return NULL;
	}
	return mem;
}

void mr_mem_put(struct mr_mem *mem)
{
	if (refcount_dec_and_test(&mem->ref))
		complete(&mem->released);
}

/* Offset of @iova from the start of the MR's first page. */
static u64 mr_mem_pos(const struct mr_mem *mem, u64 iova)
{
	return iova - READ_ONCE(mem->iova) + READ_ONCE(mem->first_offset);
}

/*
 * The kernel address of byte @pos of the MR (counted from the start of its
 * first page), with in *@n the number of bytes from there that lie in the
 * same page (at most *@n). A user page is mapped and returned in *@page:
 * the caller unmaps it with kunmap_local(). NULL if @pos lies beyond the
 * page list, which a fast-reg MR remapped under a racing copy can do.
 */
static void *mr_mem_map(struct mr_mem *mem, u64 pos, u32 *n,
			struct page **page)
{
	u32 shift = READ_ONCE(mem->page_shift);
	u64 idx, off, psize;

	*page = NULL;
	if (mem->type == MR_MEM_DMA)
		return (void *)(uintptr_t)pos;

	idx = pos >> shift;
	if (idx >= READ_ONCE(mem->npages))
		return NULL;
	psize = BIT_ULL(shift);
	off = pos & (psize - 1);
	*n = min_t(u64, *n, psize - off);
	if (mem->type == MR_MEM_USER) {
		*page = mem->pages[idx];
		return kmap_local_page(*page) + off;
	}
	return (void *)(uintptr_t)(READ_ONCE(mem->addrs[idx]) + off);
}

static void mr_mem_unmap(void *addr, struct page *page, bool written)
{
	if (!page)
		return;
	kunmap_local(addr);
	if (written)
		flush_dcache_page(page);
}

/* Returns the number of bytes not copied. */
static u32 mr_mem_copy(struct mr_mem *mem, u64 iova, void *buf, u32 len,
		       bool to_mem)
{
	u64 pos = mr_mem_pos(mem, iova);
	struct page *page;
	void *addr;
	u32 n;

	while (len) {
		n = len;
		addr = mr_mem_map(mem, pos, &n, &page);
		if (!addr)
			break;
		if (to_mem)
			memcpy(addr, buf, n);
		else
			memcpy(buf, addr, n);
		mr_mem_unmap(addr, page, to_mem);
		buf += n;
		pos += n;
		len -= n;
	}
	return len;
}

/**
 * mr_mem_write() - copy into registered memory
 * @mem: an MR obtained from mr_mem_get()
 * @iova: where, in the MR's address space
 * @src: what
 * @len: how many bytes
 *
 * [@iova, @iova + @len) must lie inside the MR, as mr_mem_get() checked
 * it: a range outside is refused, with a warning (it is a driver bug).
 */
void mr_mem_write(struct mr_mem *mem, u64 iova, const void *src, u32 len)
{
	if (WARN_ON_ONCE(!mr_mem_range_ok(mem, iova, len)))
		return;
	mr_mem_copy(mem, iova, (void *)src, len, true);
}

/**
 * mr_mem_read() - copy out of registered memory
 * @mem: an MR obtained from mr_mem_get()
 * @iova: where, in the MR's address space
 * @dst: where to
 * @len: how many bytes
 *
 * As mr_mem_write(); whatever could not be read is zeroed in @dst, so no
 * stale kernel memory ever goes out in a packet.
 */
void mr_mem_read(struct mr_mem *mem, u64 iova, void *dst, u32 len)
{
	u32 left;

	if (WARN_ON_ONCE(!mr_mem_range_ok(mem, iova, len))) {
		memset(dst, 0, len);
		return;
	}
	left = mr_mem_copy(mem, iova, dst, len, false);
	if (left)
		memset(dst + len - left, 0, left);
}

/**
 * mr_mem_write_skb() - copy packet data into registered memory
 * @mem: an MR obtained from mr_mem_get()
 * @iova: where, in the MR's address space (range checked by mr_mem_get())
 * @skb: the packet
 * @offset: where the data starts in @skb
 * @len: how many bytes
 *
 * Return: 0, -EFAULT if @skb is shorter than @offset + @len (part of the
 * data may have been copied), or -EINVAL for an unchecked range.
 */
int mr_mem_write_skb(struct mr_mem *mem, u64 iova, const struct sk_buff *skb,
		     int offset, u32 len)
{
	struct page *page;
	void *addr;
	u64 pos;
	u32 n;
	int err;

	if (offset < 0 || len > INT_MAX)
		return -EINVAL;
	if (WARN_ON_ONCE(!mr_mem_range_ok(mem, iova, len)))
		return -EINVAL;

	pos = mr_mem_pos(mem, iova);
	while (len) {
		n = len;
		addr = mr_mem_map(mem, pos, &n, &page);
		if (!addr)
			return -EFAULT;
		err = skb_copy_bits(skb, offset, addr, n);
		mr_mem_unmap(addr, page, true);
		if (err)
			return err;
		offset += n;
		pos += n;
		len -= n;
	}
	return 0;
}

/**
 * mr_mem_atomic() - execute an 8-byte atomic on registered memory
 * @mem: an MR obtained from mr_mem_get() with IB_ACCESS_REMOTE_ATOMIC
 * @iova: the 8-byte aligned target (the caller checks the alignment)
 * @cmp_swap: compare and swap; else fetch and add
 * @swap_add: the value to store (compare and swap) or to add
 * @compare: the value to compare with (compare and swap)
 *
 * Atomics are serialised by a device-wide lock, so they are atomic with
 * respect to each other, but not with respect to CPU accesses to the same
 * memory.
 *
 * Return: the original value (0 for an unchecked range, not executed).
 */
u64 mr_mem_atomic(struct mr_mem *mem, u64 iova, bool cmp_swap, u64 swap_add,
		  u64 compare)
{
	struct mr_dev *dev = mem->dev;
	u32 n = sizeof(u64);
	unsigned long flags;
	struct page *page;
	u64 orig = 0, val;
	bool store;
	void *addr;

	if (WARN_ON_ONCE(!IS_ALIGNED(iova, sizeof(u64)) ||
			 !mr_mem_range_ok(mem, iova, sizeof(u64))))
		return 0;

	spin_lock_irqsave(&dev->atomic_lock, flags);
	addr = mr_mem_map(mem, mr_mem_pos(mem, iova), &n, &page);
	if (addr && n == sizeof(u64) && IS_ALIGNED((uintptr_t)addr, n)) {
		u64 *word = addr;

		orig = READ_ONCE(*word);
		store = !cmp_swap || orig == compare;
		val = cmp_swap ? swap_add : orig + swap_add;
		if (store)
			WRITE_ONCE(*word, val);
		mr_mem_unmap(addr, page, store);
	} else {
		/*
		 * A fast-reg MR whose iova is aligned while its pages are
		 * not: byte copies, still under the lock.
		 */
		if (addr)
			mr_mem_unmap(addr, page, false);
		mr_mem_copy(mem, iova, &orig, sizeof(orig), false);
		store = !cmp_swap || orig == compare;
		val = cmp_swap ? swap_add : orig + swap_add;
		if (store)
			mr_mem_copy(mem, iova, &val, sizeof(val), true);
	}
	spin_unlock_irqrestore(&dev->atomic_lock, flags);
	return orig;
}

/**
 * mr_mem_invalidate() - invalidate a fast-reg MR (LOCAL_INV, SEND_WITH_INV)
 * @dev: the device
 * @pd: the PD of the QP that asks (NULL: any)
 * @key: the MR's current key, exactly
 *
 * Any context. Copies that took the MR before keep their reference until
 * they are done.
 *
 * Return: 0 (also if the MR was invalid already), or -EINVAL if @key names
 * no MR, an MR of another PD, or one that cannot be invalidated (only
 * fast-reg MRs can).
 */
int mr_mem_invalidate(struct mr_dev *dev, struct ib_pd *pd, u32 key)
{
	unsigned long flags;
	struct mr_mem *mem;
	int err = -EINVAL;

	rcu_read_lock();
	mem = xa_load(&dev->mrs, key >> 8);
	if (mem && !refcount_inc_not_zero(&mem->ref))
		mem = NULL;
	rcu_read_unlock();
	if (!mem)
		return -EINVAL;

	spin_lock_irqsave(&mem->lock, flags);
	if (mem->type == MR_MEM_FAST && mem->key == key &&
	    (!pd || mem->ibmr.pd == pd)) {
		WRITE_ONCE(mem->valid, false);
		err = 0;
	}
	spin_unlock_irqrestore(&mem->lock, flags);
	mr_mem_put(mem);
	return err;
}

/**
 * mr_mem_fast_reg() - execute IB_WR_REG_MR
 * @dev: the device
 * @pd: the PD of the QP that posted it (NULL: any)
 * @wr: the work request
 *
 * Registers the pages mapped by the last ib_map_mr_sg() on @wr->mr, at the
 * iova and length ib_core recorded in the ib_mr then (which the ULP may
 * have changed since, e.g. to zero-base it), with key @wr->key and rights
 * @wr->access. The MR must be invalid (freshly allocated or invalidated)
 * and @wr->key must keep its index. Any context.
 *
 * Return: 0 or -EINVAL.
 */
int mr_mem_fast_reg(struct mr_dev *dev, struct ib_pd *pd,
		    const struct ib_reg_wr *wr)
{
	struct mr_mem *mem;
	unsigned long flags;
	u64 length, span;
	int err = -EINVAL;

	if (!wr->mr)
		return -EINVAL;
	mem = to_mr_mem(wr->mr);
	if (mem->dev != dev || mem->type != MR_MEM_FAST ||
	    (pd && mem->ibmr.pd != pd) || wr->key >> 8 != mem->index ||
	    mr_check_access(wr->access))
		return -EINVAL;

	spin_lock_irqsave(&mem->lock, flags);
	if (mem->valid)
		goto out;
	/* The mapped bytes must lie inside the mapped pages. */
	length = mem->ibmr.length;
	span = (u64)mem->npages << mem->page_shift;
	if (!mem->npages || mem->first_offset > span ||
	    length > span - mem->first_offset)
		goto out;

	WRITE_ONCE(mem->iova, mem->ibmr.iova);
	WRITE_ONCE(mem->length, length);
	WRITE_ONCE(mem->access, wr->access);
	WRITE_ONCE(mem->key, wr->key);
	mem->ibmr.lkey = wr->key;
	mem->ibmr.rkey = wr->key;
	/* Lookups read the fields above after seeing valid. */
	smp_store_release(&mem->valid, true);
	err = 0;
out:
	spin_unlock_irqrestore(&mem->lock, flags);
	return err;
}

/**
 * mr_get_dma_mr() - the MR ib_core makes for a PD's local_dma_lkey
 * @pd: the PD
 * @access: IB_ACCESS_* rights
 *
 * Covers all of the kernel's virtual address space (in virtual DMA mode a
 * DMA address is a kernel virtual address). Remote rights only for a PD
 * allocated with IB_PD_UNSAFE_GLOBAL_RKEY, as the name says.
 *
 * Return: the MR, or ERR_PTR(-EINVAL / -EOPNOTSUPP / -ENOMEM).
 */
struct ib_mr *mr_get_dma_mr(struct ib_pd *pd, int access)
{
	struct mr_mem *mem;
	int err;

	err = mr_check_access(access);
	if (err)
		return ERR_PTR(err);
	if ((access & MR_ACCESS_REMOTE) &&
	    !(pd->flags & IB_PD_UNSAFE_GLOBAL_RKEY))
		return ERR_PTR(-EINVAL);

	mem = mr_mem_alloc(pd, MR_MEM_DMA);
	if (!mem)
		return ERR_PTR(-ENOMEM);
	mem->access = access;
	mem->iova = 0;
	mem->length = U64_MAX;
	mem->valid = true;

	err = mr_mem_add(mem);
	if (err) {
		mr_mem_free(mem);
		return ERR_PTR(err);
	}
	return &mem->ibmr;
}

/* The pinned pages of @umem, in order, into mem->pages. */
static int mr_mem_set_user_pages(struct mr_mem *mem, struct ib_umem *umem)
{
	struct sg_page_iter piter;
	size_t npages, i = 0;

	npages = ib_umem_num_pages(umem);
	/* METAROCE_MAX_MR_SIZE keeps this far below U32_MAX. */
	if (WARN_ON_ONCE(!npages || npages > U32_MAX))
		return -EINVAL;

	mem->pages = kvcalloc(npages, sizeof(*mem->pages), GFP_KERNEL_ACCOUNT);
	if (!mem->pages)
		return -ENOMEM;

	for_each_sgtable_page(&umem->sgt_append.sgt, &piter, 0) {
		if (WARN_ON_ONCE(i == npages))
			return -EINVAL;
		mem->pages[i++] = sg_page_iter_page(&piter);
	}
	if (WARN_ON_ONCE(i != npages))
		return -EINVAL;

	mem->npages = npages;
	mem->max_pages = npages;
	mem->page_shift = PAGE_SHIFT;
	mem->first_offset = ib_umem_offset(umem);
	return 0;
}

/**
 * mr_reg_user_mr() - register user memory
 * @pd: the PD
 * @start: user virtual address of the memory
 * @length: bytes
 * @iova: the address the MR is accessed at (same offset in a page as @start)
 * @access: IB_ACCESS_* rights
 * @dmah: a DMA handle (processing hints for PCI devices; see compat.h):
 *	metaroce allocates none, so this must be NULL
 * @udata: no driver-specific request or response is defined
 *
 * Return: the MR, or an ERR_PTR(): -EINVAL for bad access flags, length
 * or addresses, -EOPNOTSUPP for on-demand paging, a DMA handle or a driver
 * request, or what pinning the memory returned (-EFAULT, -ENOMEM).
 */
struct ib_mr *mr_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
			     u64 iova, int access, struct ib_dmah *dmah,
			     struct ib_udata *udata)
{
	struct ib_umem *umem;
	struct mr_mem *mem;
	int err;

	err = mr_check_access(access);
	if (err)
		return ERR_PTR(err);
	if (dmah || !mr_udata_no_request(udata))
		return ERR_PTR(-EOPNOTSUPP);
	if (!length || length > METAROCE_MAX_MR_SIZE ||
	    length - 1 > U64_MAX - iova ||
	    (start & ~PAGE_MASK) != (iova & ~PAGE_MASK))
		return ERR_PTR(-EINVAL);

	mem = mr_mem_alloc(pd, MR_MEM_USER);
	if (!mem)
		return ERR_PTR(-ENOMEM);

	/* Checks that [start, start + length) does not wrap. */
	umem = ib_umem_get_va(pd->device, start, length, access);
	if (IS_ERR(umem)) {
		err = PTR_ERR(umem);
		goto err_free;
	}
	mem->umem = umem;

	err = mr_mem_set_user_pages(mem, umem);
	if (err)
		goto err_free;

	mem->access = access;
	mem->iova = iova;
	mem->length = length;
	mem->valid = true;
	/* ib_core sets these after a registration, not after a rereg. */
	mem->ibmr.iova = iova;
	mem->ibmr.length = length;

	err = mr_mem_add(mem);
	if (err)
		goto err_free;
	return &mem->ibmr;

err_free:
	mr_mem_free(mem);
	return ERR_PTR(err);
}

/**
 * mr_rereg_user_mr() - change a user MR's translation, PD or rights
 * @ibmr: the MR
 * @flags: IB_MR_REREG_* (ib_core checked them)
 * @start: new user address (IB_MR_REREG_TRANS)
 * @length: new length (IB_MR_REREG_TRANS)
 * @iova: new iova (IB_MR_REREG_TRANS)
 * @access: new rights (IB_MR_REREG_ACCESS)
 * @pd: the PD the MR is to be in (the old one unless IB_MR_REREG_PD)
 * @udata: as for mr_reg_user_mr()
 *
 * A change of PD or rights alone is made in place and keeps the keys, so
 * that a peer holding the rkey goes on using it: ib_core moves the MR to
 * the new PD, we change its rights (packets already being placed finish
 * with the old ones). A new translation, or write rights on pages pinned
 * read-only, registers a new MR (new keys), which ib_core puts in place of
 * the old one before deregistering that; the old MR is untouched if this
 * fails. Both are pinned for a moment.
 *
 * Return: NULL when changed in place, else the new MR, or an ERR_PTR() as
 * from mr_reg_user_mr().
 */
struct ib_mr *mr_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
			       u64 length, u64 iova, int access,
			       struct ib_pd *pd, struct ib_udata *udata)
{
	struct mr_mem *old = to_mr_mem(ibmr);

	if (old->type != MR_MEM_USER)
		return ERR_PTR(-EINVAL);
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = old->umem->address;
		length = old->length;
		iova = old->iova;
	}
	if (!(flags & IB_MR_REREG_ACCESS))
		access = old->access;
	if (!(flags & IB_MR_REREG_TRANS) &&
	    (old->umem->writable || !ib_access_writable(access))) {
		int err = mr_check_access(access);

		if (err)
			return ERR_PTR(err);
		if (!mr_udata_no_request(udata))
			return ERR_PTR(-EOPNOTSUPP);
		WRITE_ONCE(old->access, access);
		return NULL;
	}
	return mr_reg_user_mr(pd, start, length, iova, access, NULL, udata);
}

/**
 * mr_alloc_mr() - allocate a fast-registration MR
 * @pd: the PD
 * @type: IB_MR_TYPE_MEM_REG (no other type is supported)
 * @max_num_sg: pages the MR can map, at most METAROCE_MAX_FAST_REG_PAGES
 *
 * The MR is invalid until an IB_WR_REG_MR registers what ib_map_mr_sg()
 * mapped.
 *
 * Return: the MR, or ERR_PTR(-EOPNOTSUPP) for SG_GAPS and INTEGRITY MRs,
 * ERR_PTR(-EINVAL) for other types or sizes, ERR_PTR(-ENOMEM).
 */
struct ib_mr *mr_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
			  u32 max_num_sg)
{
	struct mr_mem *mem;
	int err;

	if (type == IB_MR_TYPE_SG_GAPS || type == IB_MR_TYPE_INTEGRITY)
		return ERR_PTR(-EOPNOTSUPP);
	if (type != IB_MR_TYPE_MEM_REG || !max_num_sg ||
	    max_num_sg > METAROCE_MAX_FAST_REG_PAGES)
		return ERR_PTR(-EINVAL);

	mem = mr_mem_alloc(pd, MR_MEM_FAST);
	if (!mem)
		return ERR_PTR(-ENOMEM);
	mem->addrs = kcalloc(max_num_sg, sizeof(*mem->addrs),
			     GFP_KERNEL_ACCOUNT);
	if (!mem->addrs) {
		err = -ENOMEM;
		goto err_free;
	}
	mem->max_pages = max_num_sg;

	err = mr_mem_add(mem);
	if (err)
		goto err_free;
	return &mem->ibmr;

err_free:
	mr_mem_free(mem);
	return ERR_PTR(err);
}

static int mr_mem_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct mr_mem *mem = to_mr_mem(ibmr);
	u32 n = mem->npages;

	if (n == mem->max_pages)
		return -ENOMEM;
	WRITE_ONCE(mem->addrs[n], addr);
	WRITE_ONCE(mem->npages, n + 1);
	return 0;
}

/**
 * mr_map_mr_sg() - map a DMA-mapped scatterlist into a fast-reg MR
 * @ibmr: the MR
 * @sg: the scatterlist (DMA addresses are kernel virtual addresses here)
 * @sg_nents: its entries
 * @sg_offset: offset into the first entry, updated as ib_sg_to_pages() does
 *
 * The page size is the one given to ib_map_mr_sg() (4 KiB or more, a power
 * of two).
 *
 * Return: the number of entries mapped, or a negative errno.
 */
int mr_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		 unsigned int *sg_offset)
{
	struct mr_mem *mem = to_mr_mem(ibmr);
	u32 psize = ibmr->page_size;
	int n;

	if (mem->type != MR_MEM_FAST || psize < SZ_4K ||
	    !is_power_of_2(psize))
		return -EINVAL;

	WRITE_ONCE(mem->npages, 0);
	WRITE_ONCE(mem->page_shift, ilog2(psize));
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, mr_mem_set_page);
	/* ib_sg_to_pages() set iova to the first byte's address. */
	WRITE_ONCE(mem->first_offset, ibmr->iova & (psize - 1));
	return n;
}

/**
 * mr_dereg_mr() - deregister an MR
 * @ibmr: the MR
 * @udata: unused
 *
 * Returns only once no copy can touch the MR's memory any more: waits for
 * the copies in flight (see the top of this file).
 *
 * Return: 0.
 */
int mr_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct mr_mem *mem = to_mr_mem(ibmr);

	xa_erase(&mem->dev->mrs, mem->index);
	mr_mem_put(mem);
	wait_for_completion(&mem->released);
	mr_mem_free(mem);
	return 0;
}

/* ------------------------------------------------- scatter/gather lists */
int mr_sges_read(struct mr_dev *dev, struct ib_pd *pd,
		 const struct ib_sge *sge, u32 num_sge, u32 offset, void *to,
		 u32 len)
{
	u32 i;

	for (i = 0; i < num_sge && len; i++) {
		struct mr_mem *mem;
		u32 n;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - offset);
		mem = mr_mem_get(dev, pd, sge[i].lkey, 0, sge[i].addr + offset,
				 n);
		if (!mem)
			return -EACCES;
		mr_mem_read(mem, sge[i].addr + offset, to, n);
		mr_mem_put(mem);
		to += n;
		len -= n;
		offset = 0;
	}
	return len ? -EINVAL : 0;
}

int mr_sges_write(struct mr_dev *dev, struct ib_pd *pd,
		  const struct ib_sge *sge, u32 num_sge, u32 offset,
		  const void *from, const struct sk_buff *skb, int skb_off,
		  u32 len)
{
	u32 i;

	for (i = 0; i < num_sge && len; i++) {
		struct mr_mem *mem;
		u64 at;
		u32 n;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - offset);
		at = sge[i].addr + offset;
		mem = mr_mem_get(dev, pd, sge[i].lkey, IB_ACCESS_LOCAL_WRITE,
				 at, n);
		if (!mem)
			return -EACCES;
		if (from) {
			mr_mem_write(mem, at, from, n);
			from += n;
		} else if (mr_mem_write_skb(mem, at, skb, skb_off, n)) {
			mr_mem_put(mem);
			return -EFAULT;
		}
		mr_mem_put(mem);
		skb_off += n;
		len -= n;
		offset = 0;
	}
	return len ? -EINVAL : 0;
}
