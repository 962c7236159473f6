#pragma once
// Runs one piece of work at a time on a thread of its own, so the window stays responsive. The
// work gets a flag that cancel() sets; it reports back to the UI thread with post(). An exception
// the work throws ends it, and its message is kept for error(), never lost with the thread.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include <QObject>
#include <QString>
#include <QThread>

namespace loom::gui {

class BackgroundJob : public QObject {
  Q_OBJECT

 public:
  using Work = std::function<void(const std::atomic<bool>& cancelled)>;

  explicit BackgroundJob(QObject* parent = nullptr);
  ~BackgroundJob() override;  // cancels and waits: the work may refer to its owner

  // False (and nothing started) while earlier work still runs.
  bool start(Work work);
  void cancel();
  bool running() const;
  bool cancelled() const { return cancelled_; }
  // Waits for the work to end and delivers what it posted; for tests and the screenshot mode.
  bool wait(int milliseconds = -1);

  // Runs `f` on the UI thread, unless the job has been destroyed by then.
  void post(std::function<void()> f);

  // Why the last work ended early by throwing; empty when it did not. Read it after finished().
  QString error() const;

 signals:
  void finished();

 private:
  std::unique_ptr<QThread> thread_;
  std::atomic<bool> cancelled_ = false;
  mutable std::mutex error_mutex_;
  QString error_;
};

}  // namespace loom::gui
