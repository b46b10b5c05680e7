/*
** compiler/passes.c: roles of nodes and FuseMax's pass analysis.
**
** A node that iterates the streamed index (free: a TILE node; reduced: a
** RUNNING node) runs in some pass over the stream. It can join the pass of
** everything it reads that is itself streamed, but a value complete only
** after a full reduction over the stream (a RUNNING result) is available
** only after that reduction's pass: reading it forces the next pass. A node
** that does not iterate the stream runs in the gap after the passes it
** depends on (or before the stream: the prologue). The count is a lower
** bound for every schedule of the cascade; only rewriting lowers it.
*/
#include "plan.h"

static void collect_reads(const Expr *e, unsigned char *reads, int n)
{
	if (!e)
		return;
	if (e->kind == EX_ACCESS && e->tensor->def) {
		int id = e->tensor->def->id;
		if (id >= 0 && id < n)
			reads[id] = 1;
	}
	for (int i = 0; i < e->nargs; i++)
		collect_reads(e->args[i], reads, n);
}

int plan_passes(Arena *a, Plan *p, int rebase)
{
	Cascade *c = p->c;
	int n = c->nodes.n, passes = 0;
	/* the rebase information survives a recount of the same nodes */
	if (!p->np || p->np_n != n) {
		p->np = ARENA_ARRAY(a, NodePlan, n + 1);
		p->np_n = n;
	}
	unsigned char *reads = ARENA_ARRAY(a, unsigned char, n + 1);
	for (int x = 0; x < n; x++) {
		Node *nd = c->nodes.v[x];
		NodePlan *np = &p->np[x];
		np->svar = -1, np->barrier = -1, np->role = ROLE_PROLOGUE;
		for (int v = 0; p->stream >= 0 && v < nd->nfree + nd->nred; v++)
			if (p->cls[x][v] == p->stream)
				np->svar = v;
		int streamed = np->svar >= 0;
		if (streamed)
			np->role = np->svar < nd->nfree ? ROLE_TILE : ROLE_RUNNING;
		for (int y = 0; y < n; y++)
			reads[y] = 0;
		collect_reads(nd->body, reads, n);
		collect_reads(nd->filter, reads, n);
		int need = streamed ? 1 : 0;
		for (int y = 0; y < x; y++) {
			if (!reads[y])
				continue;
			NodePlan *ny = &p->np[y];
			int running_ok = rebase && p->ref_ok && p->ref_ok[x * n + y];
			int at; /* earliest pass (or gap) in which y's value can be used here */
			if (ny->role == ROLE_TILE) {
				at = ny->pass;
				/* a rescaled value read by a node that cannot follow the
				** rescale must wait for its references to complete */
				for (int m = 0;
				     rebase && streamed && !running_ok && m < ny->run.nrefs; m++)
					if (p->np[ny->run.ref[m]].pass + 1 > at)
						at = p->np[ny->run.ref[m]].pass + 1;
			} else if (ny->role == ROLE_RUNNING)
				at = streamed ? (running_ok ? ny->pass : ny->pass + 1) : ny->pass;
			else if (ny->role == ROLE_EPILOGUE)
				at = streamed ? (running_ok ? ny->pass : ny->pass + 1) : ny->pass;
			else
				at = streamed ? 1 : 0;
			if (at > need) {
				need = at;
				np->barrier = y;
			}
		}
		np->pass = need;
		if (!streamed)
			np->role = need == 0 ? ROLE_PROLOGUE : ROLE_EPILOGUE;
		if (streamed && need > passes)
			passes = need;
	}
	if (p->stream < 0)
		passes = n ? 1 : 0;
	return passes;
}
