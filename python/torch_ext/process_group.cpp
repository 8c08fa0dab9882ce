/*
 * backend="mrc" for torch.distributed (torch 1.13): a c10d::ProcessGroup
 * over one mrc communicator of shared-memory processes on this host.
 *
 * The layer is thin on purpose: it checks the tensors, maps torch's dtype
 * and ReduceOp to mrc's, and calls the C API; every algorithm is mrc's.
 *
 * Rendezvous: rank 0 makes a job name and a token (128 random bits each)
 * and puts them in the process group's store; every rank reads them and
 * joins with mrc_comm_init_env, as a rank started by `mrc launch` does.
 * The process-group timeout is the communicator's timeout.
 *
 * Calls are asynchronous as torch expects: each collective is checked on
 * the caller's thread (a bad tensor or op raises at once, before any peer
 * is touched) and then queued to the group's one worker thread, which runs
 * the mrc calls in order (a communicator is used by one thread at a time).
 * The returned Work completes when the call has; a failed call (a peer
 * that died: MRC_ERR_PEER_LOST; MRC_ERR_TIMEOUT) completes it with a
 * RuntimeError carrying mrc's message, which names the ranks.
 *
 * Accepts: dense CPU tensors of int8, uint8, int32, int64, float16,
 * bfloat16, float32, float64 (torch has no uint32/uint64); one tensor per
 * call (torch's per-device lists of one); ReduceOp SUM, AVG, PRODUCT, MIN,
 * MAX. Non-contiguous tensors are copied into a contiguous one and the
 * result copied back. Limits: no GPU or sparse tensors, no BAND/BOR/BXOR/
 * PREMUL_SUM, no gather/scatter/alltoall/send/recv (each refused with a
 * RuntimeError naming what); a per-call timeout in the options is not
 * honoured (mrc has one timeout per communicator: the group's).
 */
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/utils/pybind.h>

#include <pybind11/chrono.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "mrc/comm.h"
#include "mrc/status.h"
#include "mrc/types.h"
#include "torch_ext.h"

namespace {

/* ---- mapping torch's names to mrc's --------------------------------- */

const char *dtype_names =
    "int8, uint8, int32, int64, float16, bfloat16, float32, float64";

bool to_mrc_dtype(at::ScalarType t, mrc_dtype_t *out)
{
    switch (t) {
    case at::kChar: *out = MRC_INT8; return true;
    case at::kByte: *out = MRC_UINT8; return true;
    case at::kInt: *out = MRC_INT32; return true;
    case at::kLong: *out = MRC_INT64; return true;
    case at::kHalf: *out = MRC_FLOAT16; return true;
    case at::kBFloat16: *out = MRC_BFLOAT16; return true;
    case at::kFloat: *out = MRC_FLOAT32; return true;
    case at::kDouble: *out = MRC_FLOAT64; return true;
    default: return false;
    }
}

const char *reduce_op_name(c10d::ReduceOp::RedOpType op)
{
    switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNUSED";
    }
}

mrc_op_t to_mrc_op(const c10d::ReduceOp &rop, const char *what)
{
    switch (rop.op_) {
    case c10d::ReduceOp::SUM: return MRC_SUM;
    case c10d::ReduceOp::AVG: return MRC_AVG;
    case c10d::ReduceOp::PRODUCT: return MRC_PROD;
    case c10d::ReduceOp::MIN: return MRC_MIN;
    case c10d::ReduceOp::MAX: return MRC_MAX;
    default:
        TORCH_CHECK(false, "mrc backend: ", what, ": ReduceOp.",
                    reduce_op_name(rop.op_),
                    " is not supported (mrc reduces with SUM, AVG, PRODUCT, "
                    "MIN, MAX)");
    }
    return MRC_SUM; /* not reached */
}

/* A tensor mrc can take, or a RuntimeError naming the call, the argument
 * and what is wrong with it. */
mrc_dtype_t check_tensor(const at::Tensor &t, const char *what,
                         const char *arg)
{
    TORCH_CHECK(t.defined(), "mrc backend: ", what, ": ", arg,
                " is an undefined tensor");
    TORCH_CHECK(t.device().is_cpu(), "mrc backend: ", what, ": ", arg,
                " is on ", t.device(),
                "; mrc takes CPU tensors only (use backend \"nccl\" or "
                "\"gloo\" for GPU tensors)");
    TORCH_CHECK(t.layout() == at::kStrided, "mrc backend: ", what, ": ", arg,
                " is a ", t.layout(),
                " tensor; mrc takes dense (strided) tensors only");
    mrc_dtype_t d;
    TORCH_CHECK(to_mrc_dtype(t.scalar_type(), &d), "mrc backend: ", what,
                ": ", arg, " has dtype ", t.scalar_type(),
                ", which mrc does not reduce (it takes ", dtype_names, ")");
    return d;
}

/* torch passes one tensor per device; on CPU that is a list of one. */
const at::Tensor &single(const std::vector<at::Tensor> &v, const char *what,
                         const char *arg)
{
    TORCH_CHECK(v.size() == 1, "mrc backend: ", what, ": ", arg, " holds ",
                v.size(), " tensors; mrc takes exactly one (one CPU device)");
    return v[0];
}

void check_like(const at::Tensor &t, const at::Tensor &ref, const char *what,
                const char *arg)
{
    TORCH_CHECK(t.scalar_type() == ref.scalar_type(), "mrc backend: ", what,
                ": ", arg, " has dtype ", t.scalar_type(), ", the input ",
                ref.scalar_type());
    TORCH_CHECK(t.numel() == ref.numel(), "mrc backend: ", what, ": ", arg,
                " has ", t.numel(), " elements, the input ", ref.numel());
}

/* The contiguous tensor that mrc works on: the tensor itself, or a copy
 * that is copied back when the call is done (see finish_tensor). */
at::Tensor flat(const at::Tensor &t)
{
    return t.is_contiguous() ? t : t.contiguous();
}

void copy_back(at::Tensor &t, const at::Tensor &f)
{
    if (!f.is_same(t))
        t.copy_(f);
}

/* Throws mrc's message for a failed call; runs on the worker thread, where
 * mrc's per-thread last error was set. */
void check_status(mrc_status_t st, const char *what, int rank)
{
    if (st == MRC_OK)
        return;
    const char *detail = mrc_last_error();
    TORCH_CHECK(false, "mrc backend: ", what, " failed on rank ", rank, ": ",
                mrc_status_name(st), ": ",
                detail && *detail ? detail : mrc_status_string(st));
}

/* ---- the work object ------------------------------------------------- */

class WorkMrc : public c10d::Work {
  public:
    WorkMrc(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
        : c10d::Work(rank, type), outputs_(std::move(outputs)),
          future_(c10::make_intrusive<at::ivalue::Future>(
              c10::ListType::create(c10::TensorType::get())))
    {
    }

    std::vector<at::Tensor> result() override { return outputs_; }

    /* DDP's reducer waits on this future for the allreduced buckets. */
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override
    {
        return future_;
    }

    /* Called once by the worker thread. */
    void complete(std::exception_ptr error)
    {
        finish(error);
        if (error)
            future_->setError(error);
        else
            future_->markCompleted(c10::IValue(outputs_));
    }

  private:
    std::vector<at::Tensor> outputs_;
    c10::intrusive_ptr<at::ivalue::Future> future_;
};

/* ---- the rendezvous -------------------------------------------------- */

std::string random_name(int chars)
{
    static const char digits[] = "0123456789abcdef";
    std::random_device rd; /* getrandom(2) on Linux */
    std::string s;
    for (int i = 0; i < chars; i++)
        s += digits[rd() & 15];
    return s;
}

std::string host_name()
{
    char name[256] = "";
    gethostname(name, sizeof name - 1);
    return name;
}

void store_set(c10d::Store &store, const std::string &key,
               const std::string &value)
{
    store.set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string store_get(c10d::Store &store, const std::string &key,
                      std::chrono::milliseconds timeout)
{
    store.wait({key}, timeout);
    std::vector<uint8_t> v = store.get(key);
    return std::string(v.begin(), v.end());
}

/* mrc_comm_init_env reads the job from the environment; the variables are
 * set for the call and restored after it (one rendezvous at a time). */
mrc_status_t init_from(int size, int rank, const std::string &job,
                       const std::string &token, const mrc_config_t *cfg,
                       mrc_comm_t **comm)
{
    static std::mutex env_mutex;
    std::lock_guard<std::mutex> lock(env_mutex);
    const char *names[] = {"MRC_NRANKS", "MRC_RANK", "MRC_JOB",
                           "MRC_JOB_TOKEN"};
    std::string values[] = {std::to_string(size), std::to_string(rank), job,
                            token};
    std::string saved[4];
    bool had[4];
    for (int i = 0; i < 4; i++) {
        const char *v = getenv(names[i]);
        had[i] = v != nullptr;
        saved[i] = v ? v : "";
        setenv(names[i], values[i].c_str(), 1);
    }
    mrc_status_t st = mrc_comm_init_env(comm, cfg);
    for (int i = 0; i < 4; i++) {
        if (had[i])
            setenv(names[i], saved[i].c_str(), 1);
        else
            unsetenv(names[i]);
    }
    return st;
}

/* ---- the process group ----------------------------------------------- */

class ProcessGroupMrc : public c10d::ProcessGroup {
  public:
    ProcessGroupMrc(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                    int size, std::chrono::milliseconds timeout)
        : c10d::ProcessGroup(rank, size)
    {
        TORCH_CHECK(store, "mrc backend: no store to meet the peers through");
        std::string job, token, host = host_name();
        if (rank == 0) {
            job = "torch-" + random_name(32);
            token = random_name(32);
            store_set(*store, "mrc_host", host);
            store_set(*store, "mrc_token", token);
            store_set(*store, "mrc_job", job);
        } else {
            job = store_get(*store, "mrc_job", timeout);
            token = store_get(*store, "mrc_token", timeout);
            /* Shared memory joins one host's ranks only: a rank elsewhere
             * would wait for a segment it cannot see, until the timeout. */
            std::string host0 = store_get(*store, "mrc_host", timeout);
            TORCH_CHECK(host == host0, "mrc backend: rank ", rank,
                        " is on host '", host, "' and rank 0 on '", host0,
                        "'; backend \"mrc\" joins the ranks of one host "
                        "only (use \"gloo\" across hosts)");
        }
        mrc_config_t cfg = {};
        cfg.timeout_s = timeout.count() / 1000.0;
        cfg.shared_buffers = mrc_torch_shared_memory_on() ? 1 : 0;
        if (cfg.timeout_s <= 0)
            cfg.timeout_s = 1e-3; /* 0 would mean mrc's default */
        mrc_status_t st = init_from(size, rank, job, token, &cfg, &comm_);
        check_status(st, "init_process_group", rank);
        worker_ = std::thread([this] { run(); });
    }

    ~ProcessGroupMrc() override
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        cv_.notify_all();
        if (worker_.joinable())
            worker_.join();
        mrc_comm_destroy(comm_);
    }

    const std::string getBackendName() const override { return "mrc"; }

    c10::intrusive_ptr<c10d::Work>
    allreduce(std::vector<at::Tensor> &tensors,
              const c10d::AllreduceOptions &opts) override
    {
        const char *what = "all_reduce";
        at::Tensor t = single(tensors, what, "tensors");
        mrc_dtype_t d = check_tensor(t, what, "tensor");
        mrc_op_t op = to_mrc_op(opts.reduceOp, what);
        return enqueue(c10d::OpType::ALLREDUCE, {t}, [=]() mutable {
            at::Tensor f = flat(t);
            void *p = f.data_ptr();
            check_status(mrc_allreduce(p, p, (size_t)f.numel(), d, op, comm_),
                         what, getRank());
            copy_back(t, f);
        });
    }

    c10::intrusive_ptr<c10d::Work>
    broadcast(std::vector<at::Tensor> &tensors,
              const c10d::BroadcastOptions &opts) override
    {
        const char *what = "broadcast";
        at::Tensor t = single(tensors, what, "tensors");
        mrc_dtype_t d = check_tensor(t, what, "tensor");
        int root = check_root(opts.rootRank, what);
        return enqueue(c10d::OpType::BROADCAST, {t}, [=]() mutable {
            at::Tensor f = flat(t);
            void *p = f.data_ptr();
            check_status(
                mrc_broadcast(p, p, (size_t)f.numel(), d, root, comm_), what,
                getRank());
            copy_back(t, f);
        });
    }

    c10::intrusive_ptr<c10d::Work>
    reduce(std::vector<at::Tensor> &tensors,
           const c10d::ReduceOptions &opts) override
    {
        const char *what = "reduce";
        at::Tensor t = single(tensors, what, "tensors");
        mrc_dtype_t d = check_tensor(t, what, "tensor");
        mrc_op_t op = to_mrc_op(opts.reduceOp, what);
        int root = check_root(opts.rootRank, what);
        return enqueue(c10d::OpType::REDUCE, {t}, [=]() mutable {
            at::Tensor f = flat(t);
            void *p = f.data_ptr();
            /* Only the root's tensor changes, as with gloo and nccl. */
            void *recv = getRank() == root ? p : nullptr;
            check_status(mrc_reduce(p, recv, (size_t)f.numel(), d, op, root,
                                    comm_),
                         what, getRank());
            copy_back(t, f);
        });
    }

    c10::intrusive_ptr<c10d::Work>
    allgather(std::vector<std::vector<at::Tensor>> &outputs,
              std::vector<at::Tensor> &inputs,
              const c10d::AllgatherOptions &) override
    {
        const char *what = "all_gather";
        at::Tensor in = single(inputs, what, "input_tensor");
        mrc_dtype_t d = check_tensor(in, what, "input_tensor");
        TORCH_CHECK(outputs.size() == 1, "mrc backend: ", what,
                    ": output lists for ", outputs.size(),
                    " devices; mrc takes one");
        std::vector<at::Tensor> outs = outputs[0];
        check_list(outs, in, what, "tensor_list");
        return enqueue(c10d::OpType::ALLGATHER, outs, [=]() mutable {
            at::Tensor f = flat(in);
            at::Tensor all = at::empty({getSize(), f.numel()}, f.options());
            check_status(mrc_allgather(f.data_ptr(), all.data_ptr(),
                                       (size_t)f.numel(), d, comm_),
                         what, getRank());
            for (int r = 0; r < getSize(); r++)
                outs[r].copy_(all[r].view(outs[r].sizes()));
        });
    }

    c10::intrusive_ptr<c10d::Work>
    _allgather_base(at::Tensor &output, at::Tensor &input,
                    const c10d::AllgatherOptions &) override
    {
        const char *what = "_all_gather_base";
        mrc_dtype_t d = check_tensor(input, what, "input_tensor");
        check_tensor(output, what, "output_tensor");
        check_sized(output, input, getSize(), what, "output_tensor");
        at::Tensor in = input, out = output;
        return enqueue(c10d::OpType::_ALLGATHER_BASE, {out}, [=]() mutable {
            at::Tensor fi = flat(in), fo = flat(out);
            check_status(mrc_allgather(fi.data_ptr(), fo.data_ptr(),
                                       (size_t)fi.numel(), d, comm_),
                         what, getRank());
            copy_back(out, fo);
        });
    }

    c10::intrusive_ptr<c10d::Work>
    reduce_scatter(std::vector<at::Tensor> &outputs,
                   std::vector<std::vector<at::Tensor>> &inputs,
                   const c10d::ReduceScatterOptions &opts) override
    {
        const char *what = "reduce_scatter";
        at::Tensor out = single(outputs, what, "output");
        mrc_dtype_t d = check_tensor(out, what, "output");
        mrc_op_t op = to_mrc_op(opts.reduceOp, what);
        TORCH_CHECK(inputs.size() == 1, "mrc backend: ", what,
                    ": input lists for ", inputs.size(),
                    " devices; mrc takes one");
        std::vector<at::Tensor> ins = inputs[0];
        check_list(ins, out, what, "input_list");
        return enqueue(c10d::OpType::REDUCE_SCATTER, {out}, [=]() mutable {
            /* mrc takes the blocks in one buffer: gather them there. */
            at::Tensor all = at::empty({getSize(), out.numel()}, out.options());
            for (int r = 0; r < getSize(); r++)
                all[r].copy_(ins[r].reshape({-1}));
            at::Tensor fo = flat(out);
            check_status(mrc_reduce_scatter(all.data_ptr(), fo.data_ptr(),
                                            (size_t)fo.numel(), d, op, comm_),
                         what, getRank());
            copy_back(out, fo);
        });
    }

    c10::intrusive_ptr<c10d::Work>
    _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                         const c10d::ReduceScatterOptions &opts) override
    {
        const char *what = "_reduce_scatter_base";
        mrc_dtype_t d = check_tensor(output, what, "output");
        check_tensor(input, what, "input");
        mrc_op_t op = to_mrc_op(opts.reduceOp, what);
        check_sized(input, output, getSize(), what, "input");
        at::Tensor in = input, out = output;
        return enqueue(
            c10d::OpType::_REDUCE_SCATTER_BASE, {out}, [=]() mutable {
                at::Tensor fi = flat(in), fo = flat(out);
                check_status(mrc_reduce_scatter(fi.data_ptr(), fo.data_ptr(),
                                                (size_t)fo.numel(), d, op,
                                                comm_),
                             what, getRank());
                copy_back(out, fo);
            });
    }

    c10::intrusive_ptr<c10d::Work>
    barrier(const c10d::BarrierOptions &) override
    {
        /* Every rank has arrived once a one-byte allreduce is done. */
        return enqueue(c10d::OpType::BARRIER, {}, [=]() {
            uint8_t b = 0;
            check_status(mrc_allreduce(&b, &b, 1, MRC_UINT8, MRC_MAX, comm_),
                         "barrier", getRank());
        });
    }

  private:
    int check_root(int64_t root, const char *what) const
    {
        TORCH_CHECK(root >= 0 && root < getSize(), "mrc backend: ", what,
                    ": root rank ", root, " is not in the group of ",
                    getSize());
        return (int)root;
    }

    void check_list(const std::vector<at::Tensor> &list, const at::Tensor &ref,
                    const char *what, const char *arg) const
    {
        TORCH_CHECK((int)list.size() == getSize(), "mrc backend: ", what,
                    ": ", arg, " holds ", list.size(),
                    " tensors; the group has ", getSize(), " ranks");
        for (const at::Tensor &t : list) {
            check_tensor(t, what, arg);
            check_like(t, ref, what, arg);
        }
    }

    /* big must hold `size` times the elements of small, of its dtype. */
    static void check_sized(const at::Tensor &big, const at::Tensor &small,
                            int size, const char *what, const char *arg)
    {
        TORCH_CHECK(big.scalar_type() == small.scalar_type(), "mrc backend: ",
                    what, ": ", arg, " has dtype ", big.scalar_type(),
                    ", the other tensor ", small.scalar_type());
        TORCH_CHECK(big.numel() == small.numel() * size, "mrc backend: ",
                    what, ": ", arg, " has ", big.numel(),
                    " elements; it must have the group's size (", size,
                    ") times ", small.numel());
    }

    c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type,
                                           std::vector<at::Tensor> outputs,
                                           std::function<void()> fn)
    {
        auto work = c10::make_intrusive<WorkMrc>(getRank(), type,
                                                 std::move(outputs));
        {
            std::lock_guard<std::mutex> lock(mutex_);
            queue_.emplace_back(work, std::move(fn));
        }
        cv_.notify_one();
        return work;
    }

    /* The worker: runs the queued calls in order until the group goes. */
    void run()
    {
        for (;;) {
            std::unique_lock<std::mutex> lock(mutex_);
            cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
            if (queue_.empty())
                return;
            auto item = std::move(queue_.front());
            queue_.pop_front();
            lock.unlock();
            std::exception_ptr error;
            try {
                item.second();
            } catch (...) {
                error = std::current_exception();
            }
            item.first->complete(error);
        }
    }

    mrc_comm_t *comm_ = nullptr;
    std::thread worker_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::deque<std::pair<c10::intrusive_ptr<WorkMrc>, std::function<void()>>>
        queue_;
};

c10::intrusive_ptr<c10d::ProcessGroup>
create(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
       std::chrono::milliseconds timeout)
{
    return c10::make_intrusive<ProcessGroupMrc>(store, rank, size, timeout);
}

} // namespace

PYBIND11_MODULE(_torch_ext, m)
{
    m.doc() = "mrc's torch.distributed backend (see mrc.torch)";
    m.def("create_process_group", &create, pybind11::arg("store"),
          pybind11::arg("rank"), pybind11::arg("world_size"),
          pybind11::arg("timeout"),
          /* The rendezvous blocks until every rank is there. */
          pybind11::call_guard<pybind11::gil_scoped_release>(),
          "A process group of backend \"mrc\" (the creator that "
          "torch.distributed.Backend.register_backend takes).");
    m.def("use_shared_memory", &mrc_torch_use_shared_memory,
          pybind11::arg("enable"), pybind11::arg("min_bytes"),
          "Tensors of min_bytes or more from mrc_mem_alloc (see "
          "mrc.torch.use_shared_memory).");
    m.def("_raw_roundtrip", &mrc_torch_raw_roundtrip, pybind11::arg("bytes"),
          "raw_allocate, write, raw_deallocate through the CPU allocator "
          "(for the tests).");
    m.def("in_shared_memory", &mrc_torch_in_shared_memory,
          pybind11::arg("tensor"),
          "Whether the tensor's storage came from mrc_mem_alloc.");
    /* The check every collective makes of its tensors, for the tests:
     * torch 1.13's dispatcher stops a meta tensor before a process group
     * sees it, and a build without CUDA cannot make a GPU tensor. */
    m.def(
        "_check_tensor",
        [](const at::Tensor &t) { check_tensor(t, "check", "tensor"); },
        pybind11::arg("tensor"));
}
