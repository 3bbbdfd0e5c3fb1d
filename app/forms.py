"""Flask-WTF forms (CSRF included); validation of meaning stays in the domain services."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import EmailField, PasswordField, SelectField, StringField
from wtforms.validators import DataRequired, Length


class SignupForm(FlaskForm):
    email = EmailField("E-mail", validators=[DataRequired(), Length(max=320)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)])
    display_name = StringField("Your name (shown to clients)", validators=[Length(max=200)])
    #: Choices are set by the view (every IANA zone); the page preselects the browser's zone.
    timezone = SelectField("Your time zone (where you work: exports are read on this clock)",
                           validators=[DataRequired("Choose your time zone.")])


class LoginForm(FlaskForm):
    email = EmailField("E-mail", validators=[DataRequired(), Length(max=320)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)])


class PasswordForm(FlaskForm):
    current = PasswordField("Current password", validators=[DataRequired()])
    new = PasswordField("New password", validators=[DataRequired(), Length(max=1024)])
