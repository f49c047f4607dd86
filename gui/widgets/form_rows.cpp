#include "gui/widgets/form_rows.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpressionValidator>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

namespace pw::gui::form {
namespace {
constexpr const char* kUint64Property = "pwUint64";
}

QSpinBox* spin(int lo, int hi, const QString& unset) {
  auto* s = new QSpinBox;
  s->setRange(unset.isEmpty() ? lo : lo - 1, hi);
  if (!unset.isEmpty()) s->setSpecialValueText(unset);
  s->setKeyboardTracking(false);
  return s;
}

QDoubleSpinBox* dspin(double lo, double hi, int decimals, const QString& unset) {
  auto* s = new QDoubleSpinBox;
  s->setDecimals(decimals);
  s->setRange(lo, hi);
  if (!unset.isEmpty()) s->setSpecialValueText(unset);
  s->setKeyboardTracking(false);
  return s;
}

QLineEdit* uint64_edit() {
  auto* l = new QLineEdit;
  l->setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{0,20}")), l));
  l->setProperty(kUint64Property, true);
  return l;
}

QComboBox* combo(const QStringList& items) {
  auto* c = new QComboBox;
  c->addItems(items);
  return c;
}

QStringList qlist(const std::vector<std::string>& v) {
  QStringList out;
  for (const auto& s : v) out << QString::fromStdString(s);
  return out;
}

void Row::setVisible(bool on) const {
  caption->setVisible(on);
  row->setVisible(on);
}

void Row::showError(const QString& message) const {
  error->setText(message);
  error->setVisible(!message.isEmpty());
  editor->setStyleSheet(message.isEmpty() ? QString() : QStringLiteral("border: 1px solid #d9534f"));
}

Row add_row(QGridLayout* grid, const QString& path, const QString& label, QWidget* editor, const QString& tip,
            QWidget* extra) {
  auto* err = new QLabel;
  err->setObjectName(QStringLiteral("error:") + path);
  err->setWordWrap(true);
  err->setStyleSheet(QStringLiteral("color: #d9534f"));
  err->setVisible(false);
  editor->setObjectName(path);
  if (!tip.isEmpty()) editor->setToolTip(tip);
  auto* col = new QWidget;
  auto* v = new QVBoxLayout(col);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(1);
  if (extra) {
    auto* h = new QHBoxLayout;
    h->setSpacing(4);
    h->addWidget(editor, 1);
    h->addWidget(extra);
    v->addLayout(h);
  } else {
    v->addWidget(editor);
  }
  v->addWidget(err);
  auto* caption = new QLabel(label);
  caption->setBuddy(editor);
  // Level with the editor's text, also when an error grows the row.
  caption->setMinimumHeight(editor->sizeHint().height());
  const int row = grid->rowCount() == 1 && !grid->itemAtPosition(0, 0) ? 0 : grid->rowCount();
  grid->addWidget(caption, row, 0, Qt::AlignLeft | Qt::AlignTop);
  grid->addWidget(col, row, 1);
  return {editor, err, caption, col};
}

QVariant value(const QWidget* editor, bool list) {
  if (auto* s = qobject_cast<const QSpinBox*>(editor)) {
    if (!s->specialValueText().isEmpty() && s->value() == s->minimum()) return {};
    return s->value();
  }
  if (auto* d = qobject_cast<const QDoubleSpinBox*>(editor)) {
    if (!d->specialValueText().isEmpty() && d->value() == d->minimum()) return {};
    return d->value();
  }
  if (auto* c = qobject_cast<const QComboBox*>(editor)) return c->currentText();
  if (auto* b = qobject_cast<const QCheckBox*>(editor)) {
    if (b->isTristate() && b->checkState() == Qt::PartiallyChecked) return {};
    return b->isChecked();
  }
  if (auto* l = qobject_cast<const QLineEdit*>(editor)) {
    QString t = l->text().trimmed();
    if (t.isEmpty()) return {};
    if (l->property(kUint64Property).toBool()) {
      bool ok = false;
      const qulonglong n = t.toULongLong(&ok);
      return ok ? QVariant(n) : QVariant(t);  // past 2^64: the parser's message says why
    }
    if (!list) return t;
    QVariantList out;
    for (const auto& part : t.split(',', Qt::SkipEmptyParts)) {
      bool ok = false;
      int v = part.trimmed().toInt(&ok);
      out << (ok ? QVariant(v) : QVariant(part.trimmed()));  // a non-number reaches the validator
    }
    return out;
  }
  return {};
}

void set_value(QWidget* editor, const QVariant& v) {
  QSignalBlocker block(editor);
  if (auto* s = qobject_cast<QSpinBox*>(editor)) {
    s->setValue(v.isValid() ? v.toInt() : s->minimum());
  } else if (auto* d = qobject_cast<QDoubleSpinBox*>(editor)) {
    d->setValue(v.isValid() ? v.toDouble() : d->minimum());
  } else if (auto* c = qobject_cast<QComboBox*>(editor)) {
    if (v.isValid()) {
      if (c->findText(v.toString()) < 0) c->addItem(v.toString());  // keeps unknown values visible
      c->setCurrentText(v.toString());
    } else {
      c->setCurrentIndex(0);
    }
  } else if (auto* b = qobject_cast<QCheckBox*>(editor)) {
    // Tristate: partially checked is "not set" (the parser's default).
    b->setCheckState(!v.isValid() && b->isTristate() ? Qt::PartiallyChecked : v.toBool() ? Qt::Checked : Qt::Unchecked);
  } else if (auto* l = qobject_cast<QLineEdit*>(editor)) {
    if (v.typeId() == QMetaType::QVariantList) {
      QStringList parts;
      for (const auto& x : v.toList()) parts << x.toString();
      l->setText(parts.join(QStringLiteral(", ")));
    } else {
      l->setText(v.toString());
    }
  }
}

void on_edited(QWidget* editor, QObject* context, const std::function<void()>& edited) {
  if (auto* s = qobject_cast<QSpinBox*>(editor))
    QObject::connect(s, qOverload<int>(&QSpinBox::valueChanged), context, edited);
  else if (auto* d = qobject_cast<QDoubleSpinBox*>(editor))
    QObject::connect(d, qOverload<double>(&QDoubleSpinBox::valueChanged), context, edited);
  else if (auto* c = qobject_cast<QComboBox*>(editor))
    QObject::connect(c, &QComboBox::currentTextChanged, context, edited);
  else if (auto* b = qobject_cast<QCheckBox*>(editor))
    QObject::connect(b, &QCheckBox::stateChanged, context, edited);
  else if (auto* l = qobject_cast<QLineEdit*>(editor))
    QObject::connect(l, &QLineEdit::textChanged, context, edited);
}

}  // namespace pw::gui::form
